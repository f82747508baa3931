"""The shared decoder skeleton (paper 1, Appendix A.2): embeddings, blocks, norms, heads, cache.

Import from the submodules (`configuration`, `cache`, `layers`, `decoder`); this package file stays empty so
that mixers can import `hf_icl.modeling.cache` without pulling in the skeleton.
"""

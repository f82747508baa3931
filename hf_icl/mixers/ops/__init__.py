"""Primitives shared by several token mixers: padding masks, short causal convolutions, FFT long convolutions,
diagonal state-space kernels, chunked linear recurrences and selective scans; `cpu_paths` says when a hand-written
CPU path may replace the plain expression.

A mixer may import from here; mixers never import each other's internals. Every fast path (CUDA kernels) sits
behind a guarded import in the module that uses it, and the pure-PyTorch function next to it is its test oracle.
"""

"""The split streams every builder draws from are frozen: a change would silently redraw every cached dataset."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from hf_icl.tasks.builder import SPLIT_STREAMS, SPLITS, split_stream


def test_every_split_has_its_own_stream():
    assert set(SPLIT_STREAMS) == set(SPLITS)
    assert sorted(SPLIT_STREAMS.values()) == [0, 1, 2]


def test_streams_are_the_committed_ones():
    # Hand-written: [seed, crc32(b"copy"), 1] for the test split, [seed, 2] for validation without a name.
    assert split_stream(7, "test", "copy") == [7, 1304083330, 1]
    assert split_stream(7, "validation") == [7, 2]
    # The first draws of those streams, recorded before the streams moved into one helper.
    assert np.random.default_rng(split_stream(7, "test", "copy")).integers(0, 10**9, 3).tolist() == [
        319251158,
        36016543,
        366565069,
    ]
    assert np.random.default_rng(split_stream(7, "validation")).integers(0, 10**9, 3).tolist() == [
        281321651,
        277970282,
        152857253,
    ]


@given(st.integers(0, 2**32 - 1), st.sampled_from(SPLITS), st.sampled_from(SPLITS), st.text("abcxyz_", max_size=8))
def test_splits_never_share_a_stream(seed, split, other, name):
    if split != other:
        assert split_stream(seed, split, name) != split_stream(seed, other, name)
        assert split_stream(seed, split) != split_stream(seed, other)

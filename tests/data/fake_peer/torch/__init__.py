"""Test stand-in for torch: only what bench/peer_sample.py calls."""
__version__ = "0.0-test"


def from_numpy(a):
    return a


def set_num_threads(n):
    """peer_sample.py --serve sets the peer's threads per device."""
    del n

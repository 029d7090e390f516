"""splitmix64 against an independent scalar implementation written here."""

from topos.splitmix64 import SplitMix64

MASK = (1 << 64) - 1


def scalar_splitmix64(state: int):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def test_known_first_output_of_seed_zero():
    assert SplitMix64(0).next() == 0xE220A8397B1DCDAF


def test_block_draws_continue_the_scalar_stream():
    reference = scalar_splitmix64(12345)
    stream = SplitMix64(12345)
    drawn = [*stream.draws(5), stream.next(), *stream.draws(7)]
    assert [int(value) for value in drawn] == [next(reference) for _ in range(13)]


def test_units_are_top_53_bits():
    reference = scalar_splitmix64(7)
    units = SplitMix64(7).units(4)
    assert list(units) == [(next(reference) >> 11) / 2**53 for _ in range(4)]

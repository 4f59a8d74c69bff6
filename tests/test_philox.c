/* Philox4x32-10 against the Random123 known-answer vectors (kat_vectors,
 * philox4x32 with 10 rounds), and the host/device agreement contract. */
#include <criterion/criterion.h>

#include "rng/philox.h"

static void expect_kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                       uint32_t k0, uint32_t k1, uint32_t e0, uint32_t e1,
                       uint32_t e2, uint32_t e3) {
  hs_philox_ctr c = {{c0, c1, c2, c3}};
  hs_philox_ctr r = hs_philox4x32_10(c, k0, k1);
  cr_expect_eq(r.v[0], e0, "word 0: %08x != %08x", r.v[0], e0);
  cr_expect_eq(r.v[1], e1, "word 1: %08x != %08x", r.v[1], e1);
  cr_expect_eq(r.v[2], e2, "word 2: %08x != %08x", r.v[2], e2);
  cr_expect_eq(r.v[3], e3, "word 3: %08x != %08x", r.v[3], e3);
}

Test(philox, known_answer_zero) {
  expect_kat(0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
}

Test(philox, known_answer_ones) {
  expect_kat(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
             0xffffffffu, 0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu);
}

Test(philox, known_answer_pi) {
  expect_kat(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u,
             0x299f31d0u, 0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

Test(philox, draw_uses_seed_as_key) {
  hs_philox_ctr a = hs_philox_draw(0x299f31d0a4093822ull, 0x243f6a88u, 0x85a308d3u,
                                   0x13198a2eu, 0x03707344u);
  cr_expect_eq(a.v[0], 0xd16cfe09u);
  cr_expect_eq(a.v[3], 0x24126ea1u);
}

Test(philox, below_and_unit_ranges) {
  cr_expect_eq(hs_philox_below(0, 7), 0u);
  cr_expect_eq(hs_philox_below(0xffffffffu, 7), 6u);
  cr_expect_eq(hs_philox_below(0x80000000u, 10), 5u);
  cr_expect_float_eq(hs_philox_unit(0), 0.0f, 0.0f);
  cr_expect_lt(hs_philox_unit(0xffffffffu), 1.0f);
}

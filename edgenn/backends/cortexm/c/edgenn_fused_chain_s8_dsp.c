/* Fused int8 convolution chains over int16 row rings (see edgenn_fused_chain_s8_dsp.h). */
#include "edgenn_fused_chain_s8_dsp.h"

#include <string.h>

#include "edgenn_conv_s8_1ch_mac.h"
#include "edgenn_fused_chain_mac.h"

/* per-member fields of meta (kernels/fused_chain.py MEMBER_FIELDS: keep in the same order) */
enum {
    FM_IN_H, FM_IN_W, FM_IN_C, FM_OUT_H, FM_OUT_W, FM_OUT_C, FM_KH, FM_KW, FM_SH, FM_SW,
    FM_PAD_T, FM_PAD_L, FM_KIND, FM_FAST, FM_OUT_ZP, FM_ACT_LO, FM_ACT_HI, FM_IN_ZP,
    FM_RING_OFF, FM_RING_ROWS, FM_RING_WP, FM_W_OFF, FM_Q_OFF, FM_KP, FM_TP, FM_DW_MULT
};
enum { KIND_GENERAL = 0, KIND_ONE_CHANNEL = 1, KIND_DEPTHWISE = 2 };
enum { VAR_MODULO = 0, VAR_HOISTED = 1, VAR_PAIR = 2 };

typedef struct {
    const int32_t *meta;
    const uint32_t *w;
    const int32_t *quant;
    uint8_t *scratch;
    const int8_t *in;
    int8_t *out;
    int n;
    int variant;
    const int16_t *zero;
    uint8_t *gather; /* the 1-channel member's gather row (scratch, or the next output row) */
    int produced[FUSED_MAX_MEMBERS];
} chain_ctx;

/* where a member's output row goes: the next member's ring (int16, minus its zero point,
 * after its left padding columns) or the chain output (int8) */
typedef struct {
    int8_t *o8;
    int16_t *o16;
    int zp;
} chain_dest;

static inline const int32_t *chain_member(const chain_ctx *c, int k)
{
    return c->meta + FUSED_META_HEADER + FUSED_META_FIELDS * k;
}

static inline int16_t *chain_ring_row(const chain_ctx *c, const int32_t *m, int r)
{
    int16_t *ring = (int16_t *)(c->scratch + m[FM_RING_OFF]);
    return ring + (r % m[FM_RING_ROWS]) * m[FM_RING_WP] * m[FM_IN_C];
}

EDGENN_INLINE int32_t chain_requant(int32_t acc, const int32_t *q, int fast, int zp, int lo, int hi)
{
    /* why fast != 0 as 1: fast is not a literal here, one branch clamps for both modes */
    return edgenn_requant_record(acc, q, zp, lo, hi, fast != 0);
}

EDGENN_INLINE void chain_store(const chain_dest *d, int idx, int32_t v)
{
    if (d->o16) {
        d->o16[idx] = (int16_t)(v - d->zp);
    } else {
        d->o8[idx] = (int8_t)v;
    }
}

/* requantize + store one value; fast and ring are literals at every call (specialised).
 * why edgenn_requant_record's dispatch is spelled out here: through the helper the activation
 * bounds are loaded from meta before the branch and gcc 12 allocates the row loops' registers
 * differently (the cycle counts are pinned); the arithmetic is still
 * edgenn_fixed_point.h's. */
EDGENN_INLINE void chain_put(const chain_dest *d, int idx, int32_t acc, const int32_t *q,
                             const int32_t *m, const int fast, const int ring)
{
    int32_t v;
    if (fast) {
        v = edgenn_ssat8(edgenn_requant_doubled(acc, q[1], q[2], q[3]));
        if (fast == 1) {
            v = v < m[FM_ACT_LO] ? m[FM_ACT_LO] : v;
        }
    } else {
        v = edgenn_requant_s32(acc, q[1], q[2], m[FM_OUT_ZP], m[FM_ACT_LO], m[FM_ACT_HI]);
    }
    if (ring) {
        d->o16[idx] = (int16_t)(v - d->zp);
    } else {
        d->o8[idx] = (int8_t)v;
    }
}

/* channels [g, g + cnt) of one pixel from 4 accumulators */
EDGENN_INLINE void chain_store4(const chain_dest *d, int idx, const int32_t *acc, const int32_t *q,
                                int cnt, const int32_t *m, const int fast, const int ring)
{
    if (cnt == 4) {
        chain_put(d, idx, acc[0], q, m, fast, ring);
        chain_put(d, idx + 1, acc[1], q + 4, m, fast, ring);
        chain_put(d, idx + 2, acc[2], q + 8, m, fast, ring);
        chain_put(d, idx + 3, acc[3], q + 12, m, fast, ring);
        return;
    }
    for (int j = 0; j < cnt; j++) {
        chain_put(d, idx + j, acc[j], q + 4 * j, m, fast, ring);
    }
}

/* call fn(..., fast, ring) with both as literals: 6 specialised copies of a row loop */
#define CHAIN_SPECIALISE(fn, m, d, ...)                                                     \
    do {                                                                                    \
        switch ((m)[FM_FAST] * 2 + ((d)->o16 != 0)) {                                       \
        case 0: fn(__VA_ARGS__, 0, 0); break;                                               \
        case 1: fn(__VA_ARGS__, 0, 1); break;                                               \
        case 2: fn(__VA_ARGS__, 1, 0); break;                                               \
        case 3: fn(__VA_ARGS__, 1, 1); break;                                               \
        case 4: fn(__VA_ARGS__, 2, 0); break;                                               \
        default: fn(__VA_ARGS__, 2, 1); break;                                              \
        }                                                                                   \
    } while (0)

/* (b) ring_modulo: every tap run's address from (y % KH) and multiplies, per pixel */
EDGENN_INLINE void chain_row_modulo(const chain_ctx *c, const int32_t *m, int oy,
                                    const uint32_t *wm, const int32_t *qm, const chain_dest *d,
                                    const int fast, const int ring)
{
    const int16_t *base = (const int16_t *)(c->scratch + m[FM_RING_OFF]);
    const int ow = m[FM_OUT_W], oc = m[FM_OUT_C], kh = m[FM_KH], kp = m[FM_KP];
    const int cin = m[FM_IN_C], rows = m[FM_RING_ROWS], wp = m[FM_RING_WP];
    const int iy0 = oy * m[FM_SH] - m[FM_PAD_T];
    for (int ox = 0; ox < ow; ox++) {
        const uint32_t *w = wm;
        for (int g = 0; g < oc; g += 4) {
            const int32_t *q = qm + 4 * g;
            int32_t acc[4] = {q[0], q[4], q[8], q[12]};
            for (int ky = 0; ky < kh; ky++, w += 4 * kp) {
                const int iy = iy0 + ky;
                const int16_t *x = (iy < 0 || iy >= m[FM_IN_H])
                    ? c->zero + ox * m[FM_SW] * cin
                    : base + ((iy % rows) * wp + ox * m[FM_SW]) * cin;
                fused_mac_1x4(x, w, kp, acc);
            }
            chain_store4(d, ox * oc + g, acc, q, oc - g < 4 ? oc - g : 4, m, fast, ring);
        }
    }
}

/* (c) ring_hoisted: row_ptrs[ky] computed once per output row, pointer increments inside */
EDGENN_INLINE void chain_row_hoisted(const int32_t *m, const int16_t *const *row_ptrs,
                                     const uint32_t *wm, const int32_t *qm, const chain_dest *d,
                                     const int fast, const int ring)
{
    const int ow = m[FM_OUT_W], oc = m[FM_OUT_C], kh = m[FM_KH], kp = m[FM_KP];
    const int step = m[FM_SW] * m[FM_IN_C];
    int xo = 0;
    for (int ox = 0; ox < ow; ox++, xo += step) {
        const uint32_t *w = wm;
        for (int g = 0; g < oc; g += 4) {
            const int32_t *q = qm + 4 * g;
            int32_t acc[4] = {q[0], q[4], q[8], q[12]};
            for (int ky = 0; ky < kh; ky++, w += 4 * kp) {
                fused_mac_1x4(row_ptrs[ky] + xo, w, kp, acc);
            }
            chain_store4(d, ox * oc + g, acc, q, oc - g < 4 ? oc - g : 4, m, fast, ring);
        }
    }
}

/* (d) ring_hoisted_pair: (c) with 2 output pixels x 4 channels per SMLAD step */
EDGENN_INLINE void chain_row_pair(const int32_t *m, const int16_t *const *row_ptrs,
                                  const uint32_t *wm, const int32_t *qm, const chain_dest *d,
                                  const int fast, const int ring)
{
    const int ow = m[FM_OUT_W], oc = m[FM_OUT_C], kh = m[FM_KH], kp = m[FM_KP];
    const int step = m[FM_SW] * m[FM_IN_C];
    const int pb = 2 * step;
    const fused_mac_fn mac = fused_mac_2x4_for(kh, kp, pb);
    int xo = 0;
    for (int ox = 0; ox < ow; ox += 2, xo += 2 * step) {
        const int two = ox + 1 < ow; /* the odd last pixel: pixel b is computed, not stored */
        const int16_t *xrows[FUSED_MAX_KH];
        for (int ky = 0; ky < kh; ky++) {
            xrows[ky] = row_ptrs[ky] + xo;
        }
        const uint32_t *w = wm;
        for (int g = 0; g < oc; g += 4) {
            const int32_t *q = qm + 4 * g;
            int32_t acc[8] = {q[0], q[4], q[8], q[12], q[0], q[4], q[8], q[12]};
            if (mac) {
                mac(xrows, kh, w, kp, acc);
            } else {
                for (int ky = 0; ky < kh; ky++) {
                    fused_mac_2x4_c(row_ptrs[ky] + xo, w + 4 * kp * ky, kp, pb, acc);
                }
            }
            w += 4 * kp * kh;
            const int cnt = oc - g < 4 ? oc - g : 4;
            chain_store4(d, ox * oc + g, acc, q, cnt, m, fast, ring);
            if (two) {
                chain_store4(d, (ox + 1) * oc + g, acc + 4, q, cnt, m, fast, ring);
            }
        }
    }
}

/* 1-input-channel member: the taps of every pixel of the row gathered once into int16 pairs,
 * then channel-stationary (weights and constants in registers), 2 pixels per step */
EDGENN_INLINE void chain_row_one_channel(const chain_ctx *c, const int32_t *m,
                                         const int16_t *const *row_ptrs, const uint32_t *wm,
                                         const int32_t *qm, const chain_dest *d, const int fast,
                                         const int ring)
{
    const int ow = m[FM_OUT_W], oc = m[FM_OUT_C], kh = m[FM_KH], kw = m[FM_KW];
    const int sw = m[FM_SW], tp = m[FM_TP];
    uint32_t *buf = (uint32_t *)c->gather;
    for (int ox = 0; ox < ow; ox++) {
        int16_t *dst = (int16_t *)(buf + ox * tp);
        int t = 0;
        for (int ky = 0; ky < kh; ky++) {
            const int16_t *src = row_ptrs[ky] + ox * sw;
            for (int kx = 0; kx < kw; kx++) {
                dst[t++] = src[kx];
            }
        }
        if (t & 1) {
            dst[t] = 0;
        }
    }
    for (int ch = 0; ch < oc; ch++) {
        const uint32_t *w = wm + ch * tp;
        const int32_t *q = qm + 4 * ch;
        const uint32_t *x = buf;
        int ox = 0;
        if (tp == 5 && fast == 2 && ring && ow >= 2) { /* the assembly row loop */
            const chain1_pairs_fn f = chain1_pairs_for(2 * oc);
            if (f) {
                ox = ow & ~1;
                f(x, x + 5 * ox, d->o16 + ch, w, q, d->zp);
                x += 5 * ox;
            }
        }
        if (tp == 5) { /* 3x3: the 5 weight words stay in registers along the row */
            const uint32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
            for (; ox + 2 <= ow; ox += 2, x += 10) {
                int32_t a, b;
                edgenn_conv1ch_3x3_pair(x, w0, w1, w2, w3, w4, q[0], &a, &b);
                chain_put(d, ox * oc + ch, a, q, m, fast, ring);
                chain_put(d, (ox + 1) * oc + ch, b, q, m, fast, ring);
            }
        }
        for (; ox < ow; ox++, x += tp) {
            int32_t a = q[0];
            for (int p = 0; p < tp; p++) {
                a = edgenn_smlad(x[p], w[p], a);
            }
            chain_put(d, ox * oc + ch, a, q, m, fast, ring);
        }
    }
}

/* depthwise (any multiplier): a plain per-row loop over the same rings; weights one int32
 * per word, [ky][kx][out channel] */
static void chain_row_depthwise(const int32_t *m, const int16_t *const *row_ptrs,
                                const uint32_t *wm, const int32_t *qm, const chain_dest *d)
{
    const int ow = m[FM_OUT_W], oc = m[FM_OUT_C], kh = m[FM_KH], kw = m[FM_KW];
    const int cin = m[FM_IN_C], sw = m[FM_SW], mult = m[FM_DW_MULT];
    for (int ox = 0; ox < ow; ox++) {
        for (int ch = 0; ch < oc; ch++) {
            const int32_t *q = qm + 4 * ch;
            int32_t acc = q[0];
            const int ci = ch / mult;
            for (int ky = 0; ky < kh; ky++) {
                const int16_t *src = row_ptrs[ky] + ox * sw * cin + ci;
                const int32_t *wr = (const int32_t *)wm + ky * kw * oc + ch;
                for (int kx = 0; kx < kw; kx++) {
                    acc += wr[kx * oc] * src[kx * cin];
                }
            }
            chain_store(d, ox * oc + ch, chain_requant(acc, q, m[FM_FAST], m[FM_OUT_ZP],
                                                 m[FM_ACT_LO], m[FM_ACT_HI]));
        }
    }
}

/* output row oy of member k */
static void chain_row(const chain_ctx *c, int k, int oy)
{
    const int32_t *m = chain_member(c, k);
    chain_dest d = {0, 0, 0};
    if (k == c->n - 1) {
        d.o8 = c->out + oy * m[FM_OUT_W] * m[FM_OUT_C];
    } else {
        const int32_t *next = chain_member(c, k + 1);
        d.o16 = chain_ring_row(c, next, oy) + next[FM_PAD_L] * next[FM_IN_C];
        d.zp = next[FM_IN_ZP];
    }
    const uint32_t *w = c->w + m[FM_W_OFF];
    const int32_t *q = c->quant + m[FM_Q_OFF];
    if (c->variant == VAR_MODULO && m[FM_KIND] == KIND_GENERAL) {
        CHAIN_SPECIALISE(chain_row_modulo, m, &d, c, m, oy, w, q, &d);
        return;
    }
    const int16_t *row_ptrs[FUSED_MAX_KH];
    const int iy0 = oy * m[FM_SH] - m[FM_PAD_T];
    for (int ky = 0; ky < m[FM_KH]; ky++) {
        const int iy = iy0 + ky;
        row_ptrs[ky] = (iy < 0 || iy >= m[FM_IN_H]) ? c->zero : chain_ring_row(c, m, iy);
    }
    switch (m[FM_KIND]) {
    case KIND_ONE_CHANNEL:
        CHAIN_SPECIALISE(chain_row_one_channel, m, &d, c, m, row_ptrs, w, q, &d);
        break;
    case KIND_DEPTHWISE:
        chain_row_depthwise(m, row_ptrs, w, q, &d);
        break;
    default:
        if (c->variant == VAR_PAIR) {
            CHAIN_SPECIALISE(chain_row_pair, m, &d, m, row_ptrs, w, q, &d);
        } else {
            CHAIN_SPECIALISE(chain_row_hoisted, m, &d, m, row_ptrs, w, q, &d);
        }
        break;
    }
}

/* chain input row r -> member 0's ring: widened once, minus the input zero point */
static void chain_widen(const chain_ctx *c, int r)
{
    const int32_t *m = chain_member(c, 0);
    const int n = m[FM_IN_W] * m[FM_IN_C], zp = m[FM_IN_ZP];
    const int8_t *src = c->in + r * n;
    int16_t *dst = chain_ring_row(c, m, r) + m[FM_PAD_L] * m[FM_IN_C];
    for (int i = 0; i < n; i++) {
        dst[i] = (int16_t)(src[i] - zp);
    }
}

/* make the first `need` rows of member k's input exist (pull: produce only what is asked) */
static void chain_ensure(chain_ctx *c, int k, int need)
{
    while (c->produced[k] < need) {
        const int r = c->produced[k];
        if (k == 0) {
            chain_widen(c, r);
        } else {
            const int32_t *p = chain_member(c, k - 1);
            int hi = r * p[FM_SH] - p[FM_PAD_T] + p[FM_KH];
            chain_ensure(c, k - 1, hi < p[FM_IN_H] ? hi : p[FM_IN_H]);
            chain_row(c, k - 1, r);
        }
        c->produced[k] = r + 1;
    }
}

void edgenn_fused_chain_s8_dsp(const int8_t *in, int8_t *out, void *scratch, const int32_t *meta,
                               const uint32_t *w, const int32_t *quant)
{
    chain_ctx c;
    c.meta = meta;
    c.w = w;
    c.quant = quant;
    c.scratch = (uint8_t *)scratch;
    c.in = in;
    c.out = out;
    c.n = meta[0];
    c.variant = meta[1];
    c.zero = (const int16_t *)(c.scratch + meta[2]);
    for (int k = 0; k < c.n; k++) {
        c.produced[k] = 0;
    }
    /* rings (their padding columns) and the zero row start as zeros; meta[3] is where the
     * rings end (the 1-channel gather buffer follows, fully rewritten per row) */
    memset(c.scratch, 0, (size_t)meta[3]);
    const int32_t *last = chain_member(&c, c.n - 1);
    for (int oy = 0; oy < last[FM_OUT_H]; oy++) {
        int hi = oy * last[FM_SH] - last[FM_PAD_T] + last[FM_KH];
        /* meta[4] != 0: output rows >= oy are still free, row oy holds the gather row */
        c.gather = meta[4] ? (uint8_t *)out + oy * meta[4] : c.scratch + meta[3];
        chain_ensure(&c, c.n - 1, hi < last[FM_IN_H] ? hi : last[FM_IN_H]);
        chain_row(&c, c.n - 1, oy);
    }
}

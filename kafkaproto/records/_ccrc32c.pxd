# cython: language_level=3
# CRC-32C (Castagnoli), the checksum over a record batch from its attributes on, in C: the compiled codecs check
# every batch they read, so the sum is taken where the bytes are, with no call into Python and no slice. x86-64
# has an instruction for it (SSE 4.2, chosen at run time); elsewhere a table walks 8 bytes a step. The instruction
# takes three cycles to give its result but can start one every cycle, so a long buffer is summed as three
# stretches at once, whose sums are then joined: a sum moved past n more bytes is a linear map of its 32 bits,
# kept as four byte tables per stretch length (kp_crc32c_shift). The values are
# those of the crc32c package, which the pure-Python codecs use (tests/test_crc32c.py holds the two together).
# A module that cimports kp_crc32c calls it once at import, so the table is filled under the GIL.

cdef extern from *:
    """
    #include <stddef.h>
    #include <stdint.h>
    #include <string.h>

    static uint32_t kp_crc32c_table[8][256];
    static int kp_crc32c_mode;  /* 0: not chosen yet, 1: table, 2: instruction */

    static uint32_t kp_crc32c_by_table(uint32_t crc, const unsigned char *p, size_t n) {
        while (n && ((uintptr_t)p & 7)) { crc = kp_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8); n--; }
        for (; n >= 8; n -= 8, p += 8) {
            uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
            uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
            crc = kp_crc32c_table[7][lo & 0xff] ^ kp_crc32c_table[6][(lo >> 8) & 0xff]
                ^ kp_crc32c_table[5][(lo >> 16) & 0xff] ^ kp_crc32c_table[4][lo >> 24]
                ^ kp_crc32c_table[3][hi & 0xff] ^ kp_crc32c_table[2][(hi >> 8) & 0xff]
                ^ kp_crc32c_table[1][(hi >> 16) & 0xff] ^ kp_crc32c_table[0][hi >> 24];
        }
        while (n--) crc = kp_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        return crc;
    }

    /* The stretch lengths summed three at a time, and for each, the sum of a register value moved past that many
       zero bytes, a byte of the register at a time: shift[k][i][b] for byte i holding b. */
    #define KP_CRC32C_LONG 4096
    #define KP_CRC32C_SHORT 256
    static uint32_t kp_crc32c_shift[2][4][256];

    static uint32_t kp_crc32c_moved(const uint32_t table[4][256], uint32_t crc) {
        return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff]
            ^ table[3][crc >> 24];
    }

    static void kp_crc32c_fill_shift(uint32_t table[4][256], size_t n) {
        uint32_t bit_moved[32];  /* where each register bit goes: the map is linear, so bytes are sums of these */
        for (int bit = 0; bit < 32; bit++) {
            uint32_t c = 1u << bit;
            for (size_t i = 0; i < n; i++) c = kp_crc32c_table[0][c & 0xff] ^ (c >> 8);
            bit_moved[bit] = c;
        }
        for (int i = 0; i < 4; i++)
            for (uint32_t b = 0; b < 256; b++) {
                uint32_t c = 0;
                for (int bit = 0; bit < 8; bit++)
                    if (b & (1u << bit)) c ^= bit_moved[8 * i + bit];
                table[i][b] = c;
            }
    }

    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #define KP_CRC32C_X86 1
    __attribute__((target("sse4.2")))
    static uint32_t kp_crc32c_by_instruction(uint32_t crc, const unsigned char *p, size_t n) {
        uint64_t c = crc;
        while (n && ((uintptr_t)p & 7)) { c = __builtin_ia32_crc32qi((uint32_t)c, *p++); n--; }
        for (int k = 0; k < 2; k++) {
            size_t stretch = k ? KP_CRC32C_SHORT : KP_CRC32C_LONG;
            while (n >= 3 * stretch) {
                const unsigned char *end = p + stretch;
                uint64_t c1 = 0, c2 = 0;
                for (; p < end; p += 8) {
                    uint64_t w0, w1, w2;
                    memcpy(&w0, p, 8); memcpy(&w1, p + stretch, 8); memcpy(&w2, p + 2 * stretch, 8);
                    c = __builtin_ia32_crc32di(c, w0);
                    c1 = __builtin_ia32_crc32di(c1, w1);
                    c2 = __builtin_ia32_crc32di(c2, w2);
                }
                c = kp_crc32c_moved(kp_crc32c_shift[k], (uint32_t)c) ^ (uint32_t)c1;
                c = kp_crc32c_moved(kp_crc32c_shift[k], (uint32_t)c) ^ (uint32_t)c2;
                p += 2 * stretch;
                n -= 3 * stretch;
            }
        }
        for (; n >= 8; n -= 8, p += 8) { uint64_t word; memcpy(&word, p, 8); c = __builtin_ia32_crc32di(c, word); }
        while (n--) c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        return (uint32_t)c;
    }
    #endif

    static void kp_crc32c_choose(void) {
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t c = b;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            kp_crc32c_table[0][b] = c;
        }
        for (uint32_t b = 0; b < 256; b++)
            for (int t = 1; t < 8; t++)
                kp_crc32c_table[t][b] = kp_crc32c_table[0][kp_crc32c_table[t - 1][b] & 0xff]
                                        ^ (kp_crc32c_table[t - 1][b] >> 8);
        kp_crc32c_fill_shift(kp_crc32c_shift[0], KP_CRC32C_LONG);
        kp_crc32c_fill_shift(kp_crc32c_shift[1], KP_CRC32C_SHORT);
        kp_crc32c_mode = 1;
    #ifdef KP_CRC32C_X86
        if (__builtin_cpu_supports("sse4.2")) kp_crc32c_mode = 2;
    #endif
    }

    /* The CRC-32C of n bytes at p. The first call fills the table. */
    static uint32_t kp_crc32c(const unsigned char *p, size_t n) {
        if (!kp_crc32c_mode) kp_crc32c_choose();
    #ifdef KP_CRC32C_X86
        if (kp_crc32c_mode == 2) return ~kp_crc32c_by_instruction(0xFFFFFFFFu, p, n);
    #endif
        return ~kp_crc32c_by_table(0xFFFFFFFFu, p, n);
    }
    """
    unsigned int kp_crc32c(const unsigned char* p, size_t n) nogil
    unsigned int kp_crc32c_by_table(unsigned int crc, const unsigned char* p, size_t n) nogil

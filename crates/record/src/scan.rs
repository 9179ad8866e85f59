//! Where a JSON string's plain run ends: the first quote, backslash or control character.
//! The hand reader of ACP's commonest frames (`acp::mapping::chunk_scan`) looks for it in every
//! key and value; a byte-at-a-time search was a twentieth of an ACP replay. The entry reader
//! (`load::entry`) copies as it looks, sixteen bytes at a time with the same `block`.

/// Sixteen bytes looked at once with SSE2 (x86_64's baseline): the bits of those that end a
/// plain run (a quote, a backslash, a byte below 0x20), and of those of 0x80 or above.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn block(src: &[u8; 16]) -> (u32, u32) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is always present on x86_64; the load reads the sixteen bytes of `src`.
    unsafe {
        let v = _mm_loadu_si128(src.as_ptr().cast());
        let ctl = _mm_set1_epi8(0x1f);
        // A byte at most 0x1f is its own maximum with 0x1f.
        let look = _mm_or_si128(
            _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
            ),
            _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl),
        );
        (_mm_movemask_epi8(look) as u32, _mm_movemask_epi8(v) as u32)
    }
}

/// The length of the longest prefix of `b` with no quote, backslash or byte below 0x20.
#[inline]
pub fn plain_prefix(b: &[u8]) -> usize {
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while let Some(src) = b.get(i..i + 16) {
        let (m, _) = block(src.try_into().expect("sixteen bytes"));
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map_or(b.len(), |k| i + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the plain definition, with the stop at every offset of lines of every length
    /// around the sixteen-byte step, and with none.
    #[test]
    fn finds_the_first_stop_wherever_it_is() {
        let plain = |b: &[u8]| {
            b.iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .unwrap_or(b.len())
        };
        for len in 0..70 {
            let base: Vec<u8> = (0..len)
                .map(|k| [b'a', 0x7f, 0x80, 0xff, b' '][k % 5])
                .collect();
            assert_eq!(plain_prefix(&base), len);
            for at in 0..len {
                for stop in [b'"', b'\\', 0, 0x1f, b'\n'] {
                    let mut b = base.clone();
                    b[at] = stop;
                    assert_eq!(plain_prefix(&b), plain(&b), "{b:?}");
                    assert_eq!(plain_prefix(&b), at);
                    // A later stop does not move it.
                    if at + 3 < len {
                        b[at + 3] = b'"';
                        assert_eq!(plain_prefix(&b), at);
                    }
                }
            }
        }
    }
}

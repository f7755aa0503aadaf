//! Field types shared by the JSON readers: values that deserialize with
//! the precise messages arbor promises ("expected ..., got ...").

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

use crate::model::{BlockIds, BlockIdsBuilder};

/// A number as shown in a message: integers without a fraction, others as
/// written, huge or tiny ones in exponent form.
pub(super) fn show_number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.is_finite() && v.abs() < 1e15 && v.abs() >= 1e-6 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A non-negative integer that fits in `u32` (a token count); integral
/// floats such as `512.0` are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Count(pub(super) u32);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        fn out_of_range<E: de::Error>(shown: impl fmt::Display) -> E {
            E::custom(format_args!(
                "expected a non-negative integer of at most {}, got {shown}",
                u32::MAX
            ))
        }
        impl Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a non-negative integer of at most {}", u32::MAX)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                u32::try_from(v).map(Count).map_err(|_| out_of_range(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                u32::try_from(v).map(Count).map_err(|_| out_of_range(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                    Ok(Count(v as u32))
                } else {
                    Err(out_of_range(show_number(v)))
                }
            }
        }
        d.deserialize_u64(V)
    }
}

/// One hash id (u32).
struct HashId(u32);

impl<'de> Deserialize<'de> for HashId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        fn out_of_range<E: de::Error>(shown: impl fmt::Display) -> E {
            E::custom(format_args!(
                "hash id {shown} is out of range: expected an integer in 0..={}",
                u32::MAX
            ))
        }
        impl Visitor<'_> for V {
            type Value = HashId;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a hash id (an integer in 0..={})", u32::MAX)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HashId, E> {
                u32::try_from(v).map(HashId).map_err(|_| out_of_range(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HashId, E> {
                u32::try_from(v).map(HashId).map_err(|_| out_of_range(v))
            }
        }
        d.deserialize_u64(V)
    }
}

/// `hash_ids`, read straight into runs of consecutive ids (no per-id
/// allocation: a turn's ids are a few runs, see [`BlockIds`]).
pub(super) struct HashIds {
    pub(super) ids: BlockIds,
    pub(super) has_zero: bool,
}

impl<'de> Deserialize<'de> for HashIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HashIds;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of hash ids")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HashIds, A::Error> {
                let mut builder = BlockIdsBuilder::default();
                let mut has_zero = false;
                while let Some(HashId(id)) = seq.next_element()? {
                    has_zero |= id == 0;
                    builder.push(id);
                }
                Ok(HashIds {
                    ids: builder.finish(),
                    has_zero,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

//! Structs read only from JSON objects.
//!
//! A derived `Deserialize` also reads a struct from an array of its fields in declaration
//! order (serde's positional form), and serde_json offers that form for every struct, so
//! `[1, [...]]` would be a trace. The formats say "object" (`docs/trace.schema.json`), and a
//! positional document would change meaning the day a field is added. [`object_only!`] gives
//! a type a `Deserialize` that asks for a map, which serde_json refuses for anything but `{`,
//! and hands the entries to the type's derived reader.

/// Implements `Deserialize` for `$ty` from objects only: `$reader` is a private struct with
/// the same fields deriving `Deserialize` with `#[serde(remote = "$ty")]` (so the derived,
/// positional-accepting reader is never public); `$what` completes "expected ..." in errors.
macro_rules! object_only {
    ($ty:ty, $reader:ty, $what:literal) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;
                impl<'de> serde::de::Visitor<'de> for ObjectVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<$ty, A::Error> {
                        <$reader>::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                deserializer.deserialize_map(ObjectVisitor)
            }
        }
    };
}

pub(crate) use object_only;

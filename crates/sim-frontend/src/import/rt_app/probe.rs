//! Telling an rt-app file from a trace by its top level alone, without building the document:
//! a 58 MB trace read as a tree of values takes gigabytes, and this look at it none.

use super::super::json_tree::lenient;
use core::fmt;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Whether a top-level member is an object; its content is skipped, not kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Object,
    Other,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ShapeVisitor;
        impl<'de> Visitor<'de> for ShapeVisitor {
            type Value = Shape;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_i128<E>(self, _: i128) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_u128<E>(self, _: u128) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
            fn visit_unit<E>(self) -> Result<Shape, E> {
                Ok(Shape::Other)
            }
        }
        d.deserialize_any(ShapeVisitor)
    }
}

/// The shapes of the top-level members rt-app's detection looks at, first occurrence of each
/// (as [`Node::get`](super::super::json_tree::Node::get) finds it).
#[derive(Default)]
struct TopLevel {
    tasks: Option<Shape>,
    global: Option<Shape>,
    resources: Option<Shape>,
    version: bool,
}

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TopVisitor;
        impl<'de> Visitor<'de> for TopVisitor {
            type Value = TopLevel;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
                let mut top = TopLevel::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let shape: Shape = map.next_value()?;
                    match key.as_ref() {
                        "tasks" => {
                            top.tasks.get_or_insert(shape);
                        }
                        "global" => {
                            top.global.get_or_insert(shape);
                        }
                        "resources" => {
                            top.resources.get_or_insert(shape);
                        }
                        "version" => top.version = true,
                        _ => {}
                    }
                }
                Ok(top)
            }
        }
        d.deserialize_map(TopVisitor)
    }
}

/// Whether `text` reads as an rt-app file rather than a trace: a top-level `tasks` object
/// (a trace's `tasks` is an array), or a `global` or `resources` object and no `version`.
/// Strict JSON (every trace) is looked at as it is; only text that is not (comments, trailing
/// commas, which rt-app takes) is first made JSON as rt-app's reader would.
pub fn is_rt_app(text: &str) -> bool {
    let top = match serde_json::from_str::<TopLevel>(text) {
        Ok(top) => top,
        Err(_) => match serde_json::from_str::<TopLevel>(&lenient(text)) {
            Ok(top) => top,
            Err(_) => return false,
        },
    };
    top.tasks == Some(Shape::Object)
        || ((top.global == Some(Shape::Object) || top.resources == Some(Shape::Object))
            && !top.version)
}

#[cfg(test)]
mod test {
    use super::is_rt_app;

    #[test]
    fn tells_rt_app_from_traces_as_the_tree_did() {
        for (text, rt_app) in [
            (r#"{"tasks": {"t": {"run": 10}}}"#, true),
            (r#"{"global": {}, "tasks": []}"#, true),
            (r#"{"resources": {}, "version": 1, "tasks": []}"#, false),
            (
                r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"run_ns": 1}]}]}"#,
                false,
            ),
            (
                "{\n // a comment\n \"tasks\": {\"t\": {\"run\": 10,},},\n}",
                true,
            ),
            (r#"{"tasks": [], "tasks": {"t": {}}}"#, false),
            (r#"[{"tasks": {}}]"#, false),
            ("not json", false),
        ] {
            assert_eq!(is_rt_app(text), rt_app, "{text}");
        }
    }
}

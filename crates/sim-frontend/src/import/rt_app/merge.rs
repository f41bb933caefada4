//! Several rt-app files read as one, the way rt-app's `doc/merge.py` joins them: the
//! top-level objects (`global`, `resources`, `tasks`) of each file in turn, a member of a
//! later file replacing the earlier one of the same name. Every member remembers its file,
//! so errors and notes name the file it came from.

use super::super::json_tree::Node;

/// One top-level member and the file it came from.
#[derive(Clone, Debug)]
pub(super) struct Member {
    pub(super) name: String,
    pub(super) value: Node,
    pub(super) file: String,
}

/// The merged top level.
#[derive(Clone, Debug, Default)]
pub(super) struct Merged {
    pub(super) global: Vec<Member>,
    pub(super) resources: Vec<Member>,
    pub(super) tasks: Vec<Member>,
    /// Whether any file had a `tasks` object.
    pub(super) has_tasks: bool,
}

/// Why a file's top level cannot be merged: (path, message).
pub(super) type MergeError = (String, String);

/// Adds one file's top level (an object, already checked) to `into`.
pub(super) fn add(into: &mut Merged, top: &[(String, Node)], file: &str) -> Result<(), MergeError> {
    for (key, value) in top {
        let list = match key.as_str() {
            "global" => &mut into.global,
            "resources" => &mut into.resources,
            "tasks" => {
                into.has_tasks = true;
                &mut into.tasks
            }
            other => {
                return Err((
                    other.to_owned(),
                    "is not an rt-app top-level object (tasks, global, resources)".into(),
                ));
            }
        };
        let Node::Obj(members) = value else {
            return Err((
                key.clone(),
                format!("must be an object, got {}", value.kind()),
            ));
        };
        let first_of_file = list.len();
        for (name, v) in members {
            let member = Member {
                name: name.clone(),
                value: v.clone(),
                file: file.to_owned(),
            };
            // A name already given by an earlier file is replaced, as merge.py's dict update
            // does; a name repeated inside one file is kept under a numbered name, as
            // workgen makes repeated keys unique.
            if let Some(i) = list[..first_of_file].iter().position(|m| m.name == *name) {
                list[i] = member;
            } else if list[first_of_file..].iter().any(|m| m.name == *name) {
                let mut n = 1;
                while list.iter().any(|m| m.name == format!("{name}{n}")) {
                    n += 1;
                }
                list.push(Member {
                    name: format!("{name}{n}"),
                    ..member
                });
            } else {
                list.push(member);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    fn obj(text: &str) -> Vec<(String, Node)> {
        match serde_json::from_str::<Node>(text).unwrap() {
            Node::Obj(m) => m,
            _ => panic!(),
        }
    }

    #[test]
    fn later_files_replace_and_repeats_in_one_file_are_numbered() {
        let mut m = Merged::default();
        add(
            &mut m,
            &obj(r#"{"global": {"duration": 5}, "tasks": {"a": {}, "a": {"x": 1}}}"#),
            "1.json",
        )
        .unwrap();
        add(
            &mut m,
            &obj(r#"{"global": {"duration": 7, "frag": 1}, "tasks": {"a": {"y": 2}, "b": {}}}"#),
            "2.json",
        )
        .unwrap();
        let names: Vec<(&str, &str)> = m
            .tasks
            .iter()
            .map(|t| (t.name.as_str(), t.file.as_str()))
            .collect();
        assert_eq!(names, [("a", "2.json"), ("a1", "1.json"), ("b", "2.json")]);
        let g: Vec<(&str, &Node)> = m
            .global
            .iter()
            .map(|t| (t.name.as_str(), &t.value))
            .collect();
        assert_eq!(g, [("duration", &Node::Int(7)), ("frag", &Node::Int(1))]);
        assert!(m.has_tasks);
        let e = add(&mut m, &obj(r#"{"task": {}}"#), "3.json").unwrap_err();
        assert_eq!(e.0, "task");
    }
}

//! Several rt-app files read as one, the way rt-app's `doc/merge.py` joins them: the
//! top-level objects (`global`, `resources`, `tasks`) of each file in turn, a member of a
//! later file replacing the earlier one of the same name. Every member remembers its file,
//! so errors and notes name the file it came from.

use super::super::json_tree::Node;
use std::collections::BTreeMap;

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

/// Adds one file's top level (an object, already checked) to `into`, taking its members
/// rather than copying them: a file near the size limit is a tree of hundreds of MB.
pub(super) fn add(
    into: &mut Merged,
    top: Vec<(String, Node)>,
    file: &str,
) -> Result<(), MergeError> {
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
            return Err((key, format!("must be an object, got {}", value.kind())));
        };
        let first_of_file = list.len();
        // A list's names are unique (a repeat is renamed), so one index answers both "given
        // by an earlier file" and "repeated in this one"; scanning the list per member kept a
        // file of 177,000 tasks busy for more than 12 minutes.
        let mut index: BTreeMap<String, usize> = list
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.clone(), i))
            .collect();
        // Names are only ever added, so a number found taken stays taken: the search for a
        // free one goes on from where the last repeat of the name stopped.
        let mut next_number: BTreeMap<String, u64> = BTreeMap::new();
        for (name, value) in members {
            // A name already given by an earlier file is replaced, as merge.py's dict update
            // does; a name repeated inside one file is kept under a numbered name, as
            // workgen makes repeated keys unique.
            match index.get(&name).copied() {
                Some(i) if i < first_of_file => {
                    list[i] = Member {
                        name,
                        value,
                        file: file.to_owned(),
                    };
                }
                Some(_) => {
                    let n = next_number.entry(name.clone()).or_insert(1);
                    while index.contains_key(&format!("{name}{n}")) {
                        *n += 1;
                    }
                    let numbered = format!("{name}{n}");
                    index.insert(numbered.clone(), list.len());
                    list.push(Member {
                        name: numbered,
                        value,
                        file: file.to_owned(),
                    });
                }
                None => {
                    index.insert(name.clone(), list.len());
                    list.push(Member {
                        name,
                        value,
                        file: file.to_owned(),
                    });
                }
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
            obj(r#"{"global": {"duration": 5}, "tasks": {"a": {}, "a": {"x": 1}}}"#),
            "1.json",
        )
        .unwrap();
        add(
            &mut m,
            obj(r#"{"global": {"duration": 7, "frag": 1}, "tasks": {"a": {"y": 2}, "b": {}}}"#),
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
        let e = add(&mut m, obj(r#"{"task": {}}"#), "3.json").unwrap_err();
        assert_eq!(e.0, "task");
    }

    /// Each repeat takes the first number free at that moment, a numbered name written in
    /// the file included.
    #[test]
    fn repeats_take_the_first_free_number() {
        let mut m = Merged::default();
        add(
            &mut m,
            obj(r#"{"tasks": {"a": {}, "a2": {}, "a": {}, "a": {}, "a1": {}, "a": {}}}"#),
            "1.json",
        )
        .unwrap();
        let names: Vec<&str> = m.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "a2", "a1", "a3", "a11", "a4"]);
    }
}

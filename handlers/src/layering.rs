//! No two files of the crate import each other, nor does any longer circle of files: this test reads every
//! source file, resolves its `crate::`, `super::` and `self::` paths to files (`import_graph`), and fails
//! naming each circle and the imports along it.

use std::path::Path;

use crate::import_graph::{circles, file_graph, pairs};

#[test]
fn no_files_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = file_graph(&src);
    assert!(
        graph.len() > 20 && graph.contains_key("handle.rs"),
        "the sources were read: {:?}",
        graph.keys()
    );
    let mut shown: Vec<String> = pairs(&graph)
        .into_iter()
        .map(|(a, b)| format!("{a} and {b} import each other"))
        .collect();
    shown.extend(circles(&graph).iter().map(|(group, way)| {
        let way: Vec<String> = way.iter().map(|i| format!("    {i}")).collect();
        format!(
            "files {} reach each other, for one:\n{}",
            group.iter().cloned().collect::<Vec<_>>().join(", "),
            way.join("\n")
        )
    }));
    assert!(shown.is_empty(), "{}", shown.join("\n"));
}

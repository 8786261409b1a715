//! The tools a server offers, read once at start: for each package, its own tool named after the
//! skill (runx's), running its chosen runner, and a further tool `SKILL.RUNNER` for each other
//! runner (this runtime's addition).

use crate::describe::{SKILL_MD_BYTES, annotations, description, title};
use crate::error::McpError;
use crate::naming::{skill_tool_name, tool_name};
use crate::schema::{input_schema, output_schema};
use rmcp::model::Tool;
use runx_profile::{Profile, Runner};
use runx_rules::{Scope, ScopeError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Tools in one `tools/list` page.
pub const TOOLS_PAGE: usize = 100;

/// One tool: what `tools/list` shows and what `tools/call` runs.
#[derive(Debug)]
pub struct Entry {
    /// The tool as listed.
    pub tool: Tool,
    /// The package directory (as loaded: canonical).
    pub dir: PathBuf,
    /// The runner the tool runs.
    pub runner: String,
}

/// The tools of a server, in the order of the packages given and, within one, of runner names.
#[derive(Debug, Default)]
pub struct Catalog {
    entries: Vec<Arc<Entry>>,
    by_name: HashMap<String, usize>,
}

/// A `tools/list` cursor this server did not hand out.
#[derive(Debug, PartialEq, Eq)]
pub struct BadCursor;

impl Catalog {
    /// Loads every package in `dirs` and makes a tool of each runner this runtime runs (of
    /// `runner` alone when given: every package must have it). The package's chosen runner
    /// (`runner`, else its default, else its only one) is the tool named after the skill, as
    /// in runx; the others are `SKILL.RUNNER`. Runners of other types (`graph`,
    /// `agent-task`) are left out: a package whose default runner is a graph has no tool named
    /// after it, since runx's tool of that name would run the graph.
    pub fn load(dirs: &[PathBuf], runner: Option<&str>) -> Result<Catalog, McpError> {
        let mut catalog = Catalog::default();
        for dir in dirs {
            let profile = runx_profile::load(dir).map_err(|source| McpError::Package {
                dir: dir.clone(),
                source,
            })?;
            let skill_md = read_skill_md(&profile.dir);
            let runners: Vec<&Runner> = match runner {
                Some(name) => {
                    vec![
                        profile
                            .runner(Some(name))
                            .map_err(|source| McpError::Package {
                                dir: dir.clone(),
                                source,
                            })?,
                    ]
                }
                None => profile.runners.values().collect(),
            };
            let chosen = profile.runner(runner).ok().map(|r| r.name.as_str());
            for r in runners {
                let name = if chosen == Some(r.name.as_str()) {
                    skill_tool_name(&profile.skill)
                } else {
                    tool_name(&profile.skill, &r.name)
                };
                catalog.add(entry(name, &profile, r, skill_md.as_deref()))?;
            }
        }
        if catalog.entries.is_empty() {
            return Err(McpError::NoTools {
                runner: runner.map(str::to_string),
            });
        }
        Ok(catalog)
    }

    fn add(&mut self, entry: Entry) -> Result<(), McpError> {
        let name = entry.tool.name.to_string();
        if let Some(&i) = self.by_name.get(&name) {
            let first = &self.entries[i];
            return Err(McpError::Clash {
                name,
                first: first.dir.clone(),
                first_runner: first.runner.clone(),
                second: entry.dir,
                second_runner: entry.runner,
            });
        }
        self.by_name.insert(name, self.entries.len());
        self.entries.push(Arc::new(entry));
        Ok(())
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    /// Every tool, in order.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.entries.iter().map(|e| &e.tool)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (a loaded catalog never is empty).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The page of `size` tools at `cursor` (the start when `None`), and the cursor of the next
    /// page when there is one. A cursor is the index of the page's first tool, as text.
    pub fn page(
        &self,
        cursor: Option<&str>,
        size: usize,
    ) -> Result<(Vec<Tool>, Option<String>), BadCursor> {
        let start = match cursor {
            None => 0,
            Some(c) => match c.parse::<usize>() {
                Ok(n) if n > 0 && n < self.entries.len() && c == n.to_string() => n,
                _ => return Err(BadCursor),
            },
        };
        let end = start.saturating_add(size.max(1)).min(self.entries.len());
        let tools = self.entries[start..end]
            .iter()
            .map(|e| e.tool.clone())
            .collect();
        let next = (end < self.entries.len()).then(|| end.to_string());
        Ok((tools, next))
    }
}

fn entry(name: String, profile: &Profile, runner: &Runner, skill_md: Option<&str>) -> Entry {
    let title = title(profile, runner);
    let tool = Tool::new(
        name,
        description(profile, runner, skill_md),
        Arc::new(input_schema(runner)),
    )
    .with_title(title.clone())
    .with_raw_output_schema(Arc::new(output_schema(runner)))
    .with_annotations(annotations(runner, &title));
    Entry {
        tool,
        dir: profile.dir.clone(),
        runner: runner.name.clone(),
    }
}

/// The package's `SKILL.md`, read as any file of a package is (no symlink, bounded); none when
/// there is none, and none, with a warning, when it cannot be read as text.
fn read_skill_md(dir: &Path) -> Option<String> {
    let read = Scope::open(dir)
        .map_err(|e| e.to_string())
        .and_then(|scope| match scope.read("SKILL.md", SKILL_MD_BYTES) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(ScopeError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.to_string()),
        });
    match read {
        Ok(Some(bytes)) => match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            Err(_) => {
                tracing::warn!(
                    "{}/SKILL.md is not UTF-8; the tools are described by X.yaml alone",
                    dir.display()
                );
                None
            }
        },
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(
                "{e}; the tools of {} are described by X.yaml alone",
                dir.display()
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../skill-fixtures")
    }

    #[test]
    fn the_package_tool_is_the_skill_and_the_other_runners_follow() {
        let c = Catalog::load(
            &[fixtures().join("hello"), fixtures().join("imports")],
            None,
        )
        .expect("catalog");
        let names: Vec<String> = c.tools().map(|t| t.name.to_string()).collect();
        assert_eq!(
            names,
            ["hello", "hello.shout", "hello.wrong-output", "imports"]
        );
        assert!(c.get("hello.graph").is_none());
        assert!(c.get("hello.greet").is_none());
        assert_eq!(c.get("hello").map(|e| e.runner.as_str()), Some("greet"));
        assert_eq!(c.get("imports").map(|e| e.runner.as_str()), Some("default"));
    }

    #[test]
    fn one_runner_everywhere_or_an_error_naming_the_package() {
        let c = Catalog::load(&[fixtures().join("hello")], Some("shout")).expect("catalog");
        assert_eq!(c.len(), 1);
        // As in runx: `--runner` names the runner of the package's one tool.
        assert_eq!(c.get("hello").map(|e| e.runner.as_str()), Some("shout"));
        let e = Catalog::load(
            &[fixtures().join("hello"), fixtures().join("imports")],
            Some("shout"),
        )
        .expect_err("imports has no shout");
        assert!(e.to_string().contains("imports"), "{e}");
        let e = Catalog::load(&[fixtures().join("hello")], Some("graph")).expect_err("graph");
        assert!(e.to_string().contains("graph"), "{e}");
    }

    #[test]
    fn the_same_package_twice_is_a_clash() {
        let e = Catalog::load(&[fixtures().join("hello"), fixtures().join("hello")], None)
            .expect_err("clash");
        assert!(matches!(e, McpError::Clash { .. }), "{e}");
    }

    #[test]
    fn pages_and_cursors() {
        let c = Catalog::load(&[fixtures().join("hostile")], None).expect("catalog");
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (tools, next) = c.page(cursor.as_deref(), 4).expect("page");
            assert!(tools.len() <= 4);
            seen.extend(tools.into_iter().map(|t| t.name.to_string()));
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        let all: Vec<String> = c.tools().map(|t| t.name.to_string()).collect();
        assert_eq!(seen, all);
        for bad in ["", "0", "x", "-1", "01", "999", &c.len().to_string()] {
            assert_eq!(c.page(Some(bad), 4), Err(BadCursor), "{bad:?}");
        }
    }
}

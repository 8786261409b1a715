//! What a tool says of itself: its title, its description and its annotations, from the
//! profile and, where the package has one, its `SKILL.md`.

use rmcp::model::ToolAnnotations;
use runx_profile::{Profile, Runner, RunnerKind};
use std::fmt::Write as _;

/// The most of `SKILL.md` that is read; a longer file is described by its profile alone.
pub const SKILL_MD_BYTES: u64 = 64 * 1024;
/// The most of `SKILL.md` a description quotes.
const SKILL_TEXT_CHARS: usize = 1024;

/// `skill runner` as people read it: `hello: greet`.
pub fn title(profile: &Profile, runner: &Runner) -> String {
    format!("{}: {}", profile.skill, runner.name)
}

/// What the tool does, for the agent choosing it: what `SKILL.md` says the skill is for (its
/// front matter's `description`, else its first paragraph), then what the runner runs, where
/// its environment comes from, and that every call leaves a receipt.
pub fn description(profile: &Profile, runner: &Runner, skill_md: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(text) = skill_md.and_then(skill_summary) {
        out.push_str(&text);
        out.push_str("\n\n");
    }
    let version = if profile.version.is_empty() {
        String::new()
    } else {
        format!(" {}", profile.version)
    };
    let _ = write!(
        out,
        "Runner `{}` of the runx skill `{}`{version}",
        runner.name, profile.skill
    );
    match &runner.kind {
        RunnerKind::Javascript(js) => {
            let export = js.export.as_deref().unwrap_or("default");
            let _ = write!(
                out,
                ": the export `{export}` of {}, run in runx's sandbox (no network, no files, no clock: the same inputs give the same output).",
                js.module
            );
            if let Some(pages) = &js.pages {
                let _ = write!(
                    out,
                    " It pages through the JSON array file named by `{}`, {} bytes a page.",
                    pages.path_from, pages.page_bytes
                );
            }
        }
        RunnerKind::CliTool(tool) => {
            let _ = write!(
                out,
                ": the command `{}`, run as a supervised process on the server's host.",
                tool.command
            );
        }
    }
    let env = &runner.environment;
    if !env.required.is_empty() || !env.optional.is_empty() {
        let mut names: Vec<String> = env
            .required
            .iter()
            .map(|n| format!("{n} (required)"))
            .collect();
        names.extend(env.optional.iter().cloned());
        let _ = write!(out, " Environment from the server: {}.", names.join(", "));
    }
    out.push_str(" Every call writes a receipt, named in the result's `_meta`.");
    out
}

/// The hints a client may show: a javascript runner reads only its inputs (and a paged file)
/// and returns the same output for them, so it is read-only, idempotent and closed-world; a
/// cli-tool is a host process, open-world, idempotent and read-only only as its profile
/// declares (`idempotent`, `mutating: false`).
pub fn annotations(runner: &Runner, title: &str) -> ToolAnnotations {
    let hints = ToolAnnotations::with_title(title);
    match &runner.kind {
        RunnerKind::Javascript(_) => hints
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
        RunnerKind::CliTool(tool) => {
            let mutating = runner
                .declared_only
                .get("mutating")
                .and_then(serde_json::Value::as_bool);
            let hints = hints.idempotent(tool.idempotent).open_world(true);
            match mutating {
                Some(m) => hints.read_only(!m),
                None => hints.read_only(false),
            }
        }
    }
}

/// The summary of a `SKILL.md`: its front matter's `description:`, else its first paragraph
/// that is not a heading, at most 1024 characters.
pub fn skill_summary(text: &str) -> Option<String> {
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---")
    {
        let front = &rest[..end];
        if let Some(found) = front.lines().find_map(|l| l.strip_prefix("description:")) {
            let found = found.trim().trim_matches(|c| c == '"' || c == '\'');
            if !found.is_empty() {
                return Some(clip(found));
            }
        }
        body = rest[end + 4..].trim_start_matches(|c| c != '\n');
    }
    let paragraph: Vec<&str> = body
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty() || l.starts_with('#'))
        .take_while(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if paragraph.is_empty() {
        None
    } else {
        Some(clip(&paragraph.join(" ")))
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(SKILL_TEXT_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_description_first() {
        let md =
            "---\nname: hello\ndescription: \"Greets people by name.\"\n---\n# Hello\n\nBody.\n";
        assert_eq!(skill_summary(md).as_deref(), Some("Greets people by name."));
    }

    #[test]
    fn else_the_first_paragraph_after_headings() {
        let md = "# Hello\n\nGreets people\nby name.\n\nMore.\n";
        assert_eq!(skill_summary(md).as_deref(), Some("Greets people by name."));
        let md = "---\nname: x\n---\n\n## Use\nSay hi.\n";
        assert_eq!(skill_summary(md).as_deref(), Some("Say hi."));
        assert_eq!(skill_summary("# Only a heading\n"), None);
        let long = "a".repeat(5000);
        assert_eq!(
            skill_summary(&long).map(|s| s.chars().count()),
            Some(SKILL_TEXT_CHARS + 1)
        );
    }
}

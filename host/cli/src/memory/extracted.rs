//! What `seshat memory extract` prints: what the extractor read and wrote.

use std::io::Write as _;

use seshat::client::Extracted;

use crate::format;

/// What one extraction did: the messages read, each observation written (and what it replaced),
/// and what was skipped or refused.
pub fn print(out: &mut format::Out, json: bool, plugin: &str, done: &Extracted) -> anyhow::Result<()> {
    if json {
        let written: Vec<serde_json::Value> = done
            .written
            .iter()
            .map(|r| {
                serde_json::json!({
                    "scope": r.scope.to_string(),
                    "entity": r.entity,
                    "observation": r.observation,
                    "replaced": r.replaced,
                    "seq": r.seq,
                })
            })
            .collect();
        return format::json(
            out,
            &serde_json::json!({
                "extractor": plugin,
                "read": done.read.map(|(from, to)| serde_json::json!({"from": from, "to": to})),
                "proposed": done.proposed,
                "written": written,
                "known": done.known,
                "forReview": done.for_review,
                "refused": done.refused,
            }),
        );
    }
    let Some((from, to)) = done.read else {
        writeln!(out, "Nothing new to read: {plugin} has read every message of this session.")?;
        return Ok(());
    };
    writeln!(
        out,
        "{plugin} read messages {from}–{to}: {} proposed, {} written, {} already known{}.",
        done.proposed,
        done.written.len(),
        done.known,
        if done.for_review > 0 { format!(", {} for review", done.for_review) } else { String::new() }
    )?;
    for r in &done.written {
        writeln!(
            out,
            "  [{}] {}: {} (message {})",
            r.scope,
            format::clip(&r.entity, 60),
            format::clip(&r.observation, 160),
            r.seq
        )?;
        for old in &r.replaced {
            writeln!(out, "      replaces: {}", format::clip(old, 160))?;
        }
    }
    for why in &done.refused {
        writeln!(out, "  not written: {}", format::clip(why, 200))?;
    }
    Ok(())
}

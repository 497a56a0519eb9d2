//! What `seshat memory proposals | approve | reject` print: the writes to reviewed teams' memory.

use std::io::Write as _;

use seshat::memory::Proposal;

use super::versions::describe;
use crate::format;

/// The proposals, oldest first, each with what it writes and who proposed it.
pub fn print_proposals(out: &mut format::Out, json: bool, proposals: &[Proposal]) -> anyhow::Result<()> {
    if json {
        return format::json(out, &proposals);
    }
    if proposals.is_empty() {
        writeln!(out, "No proposals waiting.")?;
        return Ok(());
    }
    for p in proposals {
        writeln!(out, "{:>5}  team:{}  {}  {}  {}", p.id, p.team, p.tool, p.status, format::time(p.created_at))?;
        if let Some(source) = &p.source {
            writeln!(out, "       by {}", describe(source))?;
        }
        writeln!(out, "       {}", format::clip(&p.params.to_string(), 200))?;
        if let Some(reason) = &p.reason {
            writeln!(out, "       reason: {reason}")?;
        }
    }
    if proposals.iter().any(|p| p.status == "pending") {
        writeln!(out, "Decide one with: seshat memory approve <ID> | seshat memory reject <ID> [--reason …]")?;
    }
    Ok(())
}

/// A proposal just approved or rejected.
pub fn print_decided(out: &mut format::Out, json: bool, p: &Proposal) -> anyhow::Result<()> {
    if json {
        return format::json(out, p);
    }
    let what =
        if p.status == "approved" { "Approved: its write is made" } else { "Rejected: nothing of it is written" };
    writeln!(out, "Proposal {} ({} to team:{}). {what}.", p.id, p.tool, p.team)?;
    Ok(())
}

//! Another agent's session on the wire (`session/bring_in`): read on the client's machine, brought
//! in by the service.

use std::path::PathBuf;

use seshat_protocol::methods::{BroughtIn, ForeignItem, SessionBringInParams};

use super::{AgentCompaction, Converted, Item, Report};

impl Converted {
    /// This session as `session/bring_in`'s params, filed under `project` (the client's key for the
    /// agent's directory).
    pub fn to_params(&self, project: String) -> SessionBringInParams {
        let items = self
            .items
            .iter()
            .map(|item| match item {
                Item::Message(message, at) => ForeignItem::Message { message: message.clone(), at: *at },
                Item::Compaction(c) => ForeignItem::Compaction {
                    summary: c.summary.clone(),
                    trigger: c.trigger,
                    tokens_before: c.tokens_before,
                    created_at: c.created_at,
                },
            })
            .collect();
        SessionBringInParams {
            tool: self.tool.as_str().to_string(),
            source_id: self.source_id.clone(),
            file: self.file.display().to_string(),
            project,
            title: self.title.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            context_window: self.context_window,
            items,
            versions: self.versions.iter().cloned().collect(),
            skipped: self.skipped.clone(),
        }
    }

    /// The session a client read, from `session/bring_in`'s params, and the project key it named;
    /// an unknown agent is refused, saying which there are.
    pub fn from_params(params: SessionBringInParams) -> Result<(Converted, String), String> {
        let tool = params.tool.parse()?;
        let items = params
            .items
            .into_iter()
            .map(|item| match item {
                ForeignItem::Message { message, at } => Item::Message(message, at),
                ForeignItem::Compaction { summary, trigger, tokens_before, created_at } => {
                    Item::Compaction(AgentCompaction { summary, trigger, tokens_before, created_at })
                }
            })
            .collect();
        let converted = Converted {
            tool,
            source_id: params.source_id,
            file: PathBuf::from(params.file),
            title: params.title,
            // The directory is the client's: the project key it sent stands for it.
            cwd: Some(params.project.clone()),
            provider: params.provider,
            model: params.model,
            context_window: params.context_window,
            items,
            versions: params.versions.into_iter().collect(),
            skipped: params.skipped,
        };
        Ok((converted, params.project))
    }
}

impl From<Report> for BroughtIn {
    fn from(r: Report) -> Self {
        BroughtIn {
            tool: r.tool.as_str().to_string(),
            source_id: r.source_id,
            file: r.file.display().to_string(),
            session: r.session,
            outcome: r.outcome.to_string(),
            forked_from: r.forked_from,
            messages: r.messages,
            compactions: r.compactions,
            orphans: r.orphans,
            synthetic: r.synthetic,
            skipped: r.skipped,
            versions: r.versions.into_iter().collect(),
        }
    }
}

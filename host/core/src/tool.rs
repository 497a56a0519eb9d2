//! What a tool is, whoever serves it: its definition and what a call returns. The memory,
//! history and knowledge tools and an application's own use these two types; the agent offers
//! them to the model, `seshat mcp` serves them over MCP and `seshat serve` runs them as methods.

use serde_json::{Value, json};

/// A tool's published definition.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolDef {
    /// The plain name (`create_entities`); the agent may offer it under a prefix.
    pub name: String,
    /// A title for people.
    pub title: String,
    /// When to use it: the model chooses tools by it.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// Whether it only reads.
    pub read_only: bool,
    /// Whether it deletes.
    pub destructive: bool,
    /// Whether repeating it changes nothing more.
    pub idempotent: bool,
}

impl ToolDef {
    /// A tool that may write, titled by its name; see [`ToolDef::titled`] and
    /// [`ToolDef::read_only`].
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        let name = name.into();
        ToolDef {
            title: name.clone(),
            name,
            description: description.into(),
            input_schema,
            read_only: false,
            destructive: false,
            idempotent: false,
        }
    }

    /// With a title for people.
    #[must_use]
    pub(crate) fn titled(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Marks it as only reading (and so idempotent).
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self.idempotent = true;
        self
    }

    /// Sets whether it deletes and whether repeating it changes nothing more.
    #[must_use]
    pub fn effects(mut self, destructive: bool, idempotent: bool) -> Self {
        self.destructive = destructive;
        self.idempotent = idempotent;
        self
    }
}

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The structured result: an object, or a string for a tool that answers in text
    /// (`{"error": …}` when the call failed).
    pub structured: Value,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// A structured result.
    pub fn ok(structured: Value) -> Self {
        ToolOutput { structured, is_error: false }
    }

    /// A result in text.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { structured: Value::String(text.into()), is_error: false }
    }

    /// A failure the model reads (not fatal to the turn).
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput { structured: json!({"error": message.into()}), is_error: true }
    }

    /// A text answer when `Ok`, the error when `Err`.
    pub fn from_text(result: Result<String, String>) -> Self {
        result.map_or_else(Self::error, Self::text)
    }

    /// Text for the model: a text result as it is, the error's message, or the structured result
    /// as indented JSON. Made on demand: `seshat mcp` sends the structured result instead.
    pub fn content(&self) -> String {
        match (&self.structured, self.is_error) {
            (Value::String(text), _) => text.clone(),
            (structured, true) if structured.get("error").and_then(Value::as_str).is_some() => {
                structured["error"].as_str().unwrap_or_default().to_string()
            }
            (structured, _) => serde_json::to_string_pretty(structured).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_reads_text_as_it_is_an_error_by_its_message_and_structure_as_json() {
        assert_eq!(ToolOutput::text("42 files").content(), "42 files");
        assert_eq!(ToolOutput::error("no such entity `x`").content(), "no such entity `x`");
        assert_eq!(ToolOutput::ok(json!({"n": 1})).content(), "{\n  \"n\": 1\n}");
        assert!(ToolOutput::from_text(Err("bad".into())).is_error);
    }
}

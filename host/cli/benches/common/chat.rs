//! The messages the store benchmarks append.

use seshat::conversation::{MessageStatus, NewMessage, Part, Role, Usage};

/// A message like a chat writes: text, or a tool call, or a tool result, with usage on replies.
pub fn message(i: usize) -> NewMessage {
    let (role, parts) = match i % 4 {
        0 => (Role::User, vec![Part::Text { text: format!("request {i}: please look at the build output") }]),
        1 => (
            Role::Assistant,
            vec![Part::ToolCall {
                id: format!("call_{i}"),
                name: "run".into(),
                arguments: r#"{"cmd":"cargo build"}"#.into(),
            }],
        ),
        2 => (
            Role::Tool,
            vec![Part::ToolResult { call_id: format!("call_{}", i - 1), content: "ok\n".repeat(100), is_error: false }],
        ),
        _ => (Role::Assistant, vec![Part::Text { text: format!("answer {i}: the build passes") }]),
    };
    let usage = (role == Role::Assistant).then_some(Usage {
        input_tokens: 100,
        output_tokens: 20,
        context_tokens: Some(1000 + i as u64),
        ..Default::default()
    });
    NewMessage { role, parts, usage, status: MessageStatus::Complete }
}

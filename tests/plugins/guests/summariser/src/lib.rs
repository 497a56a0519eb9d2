//! A summariser for tests: `request.extra` says how many `complete` calls to make (and whether to
//! loop forever instead). The summary reports what it saw.

use seshat_plugin_sdk::summariser::{complete, CompletionRequest, Error, Message, Part, Role, SummaryRequest, Summariser};

struct Test;

impl Summariser for Test {
    fn summarise(request: SummaryRequest) -> Result<String, Error> {
        if request.extra == "loop" {
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        let calls: u32 = request.extra.parse().unwrap_or(1);
        let mut answers = Vec::new();
        for i in 0..calls {
            let ask = Message { id: 0, role: Role::User, parts: vec![Part::Text(format!("call {i}"))] };
            let answer = complete(&CompletionRequest {
                system: Some("summarise".into()),
                messages: vec![ask],
                max_tokens: 100_000,
                extra: "{}".into(),
            })?;
            answers.push(answer.text);
        }
        Ok(format!(
            "{} messages, previous {:?}, answers [{}]",
            request.messages.len(),
            request.previous_summary,
            answers.join(", ")
        ))
    }
}

seshat_plugin_sdk::export_summariser!(Test);

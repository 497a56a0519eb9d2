//! A summariser for tests, built without the SDK against the frozen `wit/v0.1.0` (so it also
//! proves 0.1.0 summarisers keep loading and working): `request.extra` says how many `complete`
//! calls to make (and whether to loop forever instead). The summary reports what it saw.

wit_bindgen::generate!({ path: "../../../../wit/v0.1.0", world: "summariser" });

use exports::seshat::plugin::summarise::{Guest, SummaryRequest};
use seshat::plugin::model::{CompletionRequest, complete};
use seshat::plugin::types::{Error, Message, Part, Role};

struct Test;

impl Guest for Test {
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

export!(Test);

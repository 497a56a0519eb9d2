//! The scripted provider the turn benchmarks talk to, on loopback.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use super::read_request;

/// A loopback server speaking Anthropic's streaming format: every request is answered with a
/// short streamed answer ("Hi" first, then the rest); the last body is kept.
pub fn anthropic() -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let last = Arc::new(Mutex::new(Vec::new()));
    let keep = last.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || serve(stream, &keep));
        }
    });
    (url, last)
}

fn serve(stream: TcpStream, keep: &Mutex<Vec<u8>>) {
    stream.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    while let Some((_, body)) = read_request(&mut reader) {
        *keep.lock().unwrap() = body;
        let first = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        );
        let rest = concat!(
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = write!(out, "{head}{:x}\r\n{first}\r\n", first.len());
        let _ = out.flush();
        let _ = write!(out, "{:x}\r\n{rest}\r\n0\r\n\r\n", rest.len());
        let _ = out.flush();
    }
}

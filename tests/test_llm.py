"""webmix.agents.llm end to end with the real clients and no mocks: the openai SDK and google-genai against ScriptedServer,
`chat` on both of its paths, browser-use's ChatOpenAI (harness.make_llm) driving a real Agent step in Chromium on
MiniWeb's shop, and the memory model of replay/plan_data (configure_memory + merge_all) served by the script."""
import asyncio, json, re, socket, threading, time
from urllib.request import Request, urlopen
from urllib.error import HTTPError

import openai
import pytest

from webmix.agents import harness as H          # before browser_use: harness imports it with webmix's import-time settings
from webmix.agents import actions as HA
from webmix.agents import offline as HO
from webmix.agents import session as HS
from webmix.world import checks
from webmix.data import plan_data as P
from webmix.data import replay as R
from webmix.agents.llm import (GEMINI_KEY_VARS, OPENAI_KEY_VARS, CredentialsError, ScriptedServer, chat, is_gemini,
                        openai_key)

SCHEMA = {"type": "object", "properties": {"category": {"type": "string"}, "max_price": {"type": "number"}},
          "required": ["category", "max_price"]}
USER = [{"role": "user", "content": "hello"}]


@pytest.fixture
def clean_env(monkeypatch):
    "No model credentials or base URLs from the machine's environment."
    for k in (*GEMINI_KEY_VARS, *OPENAI_KEY_VARS, "GOOGLE_GEMINI_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def client(srv, **kw):
    return openai.OpenAI(base_url=srv.base_url, api_key="EMPTY", **kw)


def last_user(req):
    return req["messages"][-1]["content"]


# ── the openai client ────────────────────────────────────────────────────────

def test_text_and_adapters_by_model_name():
    "The request's model name picks the adapter, as vLLM does with LoRA adapters; each keeps its own script."
    adapters = {"base": lambda req: f"base heard {last_user(req)}",
                "shop-lora": ["one", "two"],
                "tools": {"content": None, "tool_calls": [{"name": "pick", "arguments": {"index": 3}}]}}
    with ScriptedServer(adapters) as srv:
        c = client(srv)
        assert [m.id for m in c.models.list()] == ["base", "shop-lora", "tools"]
        ask = lambda model: c.chat.completions.create(model=model, messages=USER, temperature=0, max_tokens=16).choices[0]
        assert ask("shop-lora").message.content == "one"
        assert ask("base").message.content == "base heard hello"
        assert ask("shop-lora").message.content == "two"           # the base adapter's turn took nothing from this list
        call = ask("tools")
        assert call.finish_reason == "tool_calls" and call.message.tool_calls[0].function.name == "pick"
        assert json.loads(call.message.tool_calls[0].function.arguments) == {"index": 3}
        with pytest.raises(openai.NotFoundError, match="no-such-adapter"):
            ask("no-such-adapter")
        with pytest.raises(openai.InternalServerError, match="ScriptExhausted"):
            ask("shop-lora")
    assert [r["model"] for r in srv.requests] == ["shop-lora", "base", "shop-lora", "tools", "no-such-adapter", "shop-lora"]
    assert srv.requests[0] == {"model": "shop-lora", "messages": USER, "temperature": 0, "max_tokens": 16}


def test_json_schema_response_format():
    "json_schema output: the scripted JSON comes back as the content; a script that is not JSON is a 500, not retried."
    replies = [{"category": "Books", "max_price": 40}, '{"category": "Outdoor", "max_price": 15.5}', "not json"]
    rf = {"type": "json_schema", "json_schema": {"name": "filters", "strict": True, "schema": SCHEMA}}
    with ScriptedServer(replies) as srv:
        c = client(srv)                                          # default retries: the 500 below says not to
        ask = lambda: c.chat.completions.create(model="any", messages=USER, response_format=rf).choices[0].message.content
        assert json.loads(ask()) == {"category": "Books", "max_price": 40}
        assert json.loads(ask()) == {"category": "Outdoor", "max_price": 15.5}
        with pytest.raises(openai.InternalServerError, match="not JSON"):
            ask()
    assert len(srv.requests) == 3 and srv.requests[0]["response_format"] == rf


def test_malformed_bodies_get_400():
    bad = [({"messages": USER}, "model"),
           ({"model": "m"}, "messages"),
           ({"model": "m", "messages": []}, "messages"),
           ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
           ({"model": "m", "messages": [{"role": "user", "content": 7}]}, "messages[0].content"),
           ({"model": "m", "messages": USER, "temperature": "hot"}, "temperature"),
           ({"model": "m", "messages": USER, "max_tokens": 0}, "max_tokens"),
           ({"model": "m", "messages": USER, "response_format": {"type": "yaml"}}, "response_format"),
           ({"model": "m", "messages": USER, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
            "response_format.json_schema")]
    with ScriptedServer("fine") as srv:
        c = client(srv)
        for body, param in bad:
            with pytest.raises(openai.BadRequestError) as e:
                c.post("/chat/completions", body=body, cast_to=object)
            assert e.value.status_code == 400 and e.value.param == param, (body, e.value.body)
            assert e.value.type == "invalid_request_error" and e.value.body["message"]
        # a body that is not JSON at all (the SDK always sends JSON: plain HTTP here)
        req = Request(srv.base_url + "/chat/completions", data=b"{not json", method="POST",
                      headers={"Content-Type": "application/json"})
        with pytest.raises(HTTPError) as e:
            urlopen(req, timeout=10)
        assert e.value.code == 400 and "JSON object" in json.loads(e.value.read())["error"]["message"]
        # and the server still answers well-formed requests
        assert c.chat.completions.create(model="m", messages=USER).choices[0].message.content == "fine"
    assert len(srv.requests) == len(bad) + 2 and srv.requests[len(bad)] == "{not json"


def test_stream():
    with ScriptedServer(lambda req: "streamed " + last_user(req)) as srv:
        chunks = list(client(srv).chat.completions.create(model="m", messages=USER, stream=True,
                                                          stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed hello"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.total_tokens > 0


def test_server_stops_and_frees_its_port():
    before = threading.active_count()
    for _ in range(3):
        with ScriptedServer("x") as srv:
            assert client(srv).chat.completions.create(model="m", messages=USER).choices[0].message.content == "x"
            port = srv.port
        time.sleep(0.5)
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0        # nobody listens there any more
    time.sleep(0.5)
    assert threading.active_count() <= before + 1


def test_an_idle_server_does_not_spin():
    "Between requests the serving loop sleeps: the process spends a small part of a core while the server waits."
    with ScriptedServer("x") as srv:
        assert client(srv).chat.completions.create(model="m", messages=USER).choices[0].message.content == "x"
        time.sleep(0.5)
        cpu0, t0 = time.process_time(), time.monotonic()
        time.sleep(2.0)
        share = (time.process_time() - cpu0) / (time.monotonic() - t0)
    assert share < 0.25, f"an idle scripted server used {share:.0%} of a core"


# ── google-genai ─────────────────────────────────────────────────────────────

def test_google_genai_against_the_gemini_route():
    from google import genai
    from google.genai import types
    from pydantic import BaseModel

    class Filters(BaseModel):
        category: str
        max_price: float

    def reply(req):
        if req["response_format"]: return {"category": "Books", "max_price": 40}
        return f"{req['model']} heard {last_user(req)}"

    with ScriptedServer(reply, api_key="k1") as srv:
        g = genai.Client(api_key="k1", http_options=types.HttpOptions(base_url=srv.root))
        r = g.models.generate_content(model="gemini-2.5-flash", contents="hi",
                                      config=types.GenerateContentConfig(system_instruction="Be brief.", temperature=0,
                                                                         max_output_tokens=64))
        assert r.text == "gemini-2.5-flash heard hi" and r.usage_metadata.total_token_count > 0
        assert srv.requests[-1]["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
        assert srv.requests[-1]["temperature"] == 0 and srv.requests[-1]["max_tokens"] == 64
        r = g.models.generate_content(model="gemini-2.5-flash", contents="filters?",
                                      config=types.GenerateContentConfig(response_mime_type="application/json",
                                                                         response_schema=Filters))
        assert r.parsed == Filters(category="Books", max_price=40)
        png = types.Part.from_bytes(data=b"\x89PNG\r\n", mime_type="image/png")
        g.models.generate_content(model="gemini-2.5-flash", contents=["what is this?", png])
        parts = srv.requests[-1]["messages"][-1]["content"]
        assert parts[0] == {"type": "text", "text": "what is this?"} and parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
        bad = genai.Client(api_key="wrong", http_options=types.HttpOptions(base_url=srv.root))
        with pytest.raises(genai.errors.ClientError) as e:
            bad.models.generate_content(model="gemini-2.5-flash", contents="hi")
        assert e.value.code == 403


# ── chat: one call for both ──────────────────────────────────────────────────

def test_chat_routes_and_credentials(clean_env):
    def replies(req):
        api = "gemini-api" if "gemini" in req else "openai-api"
        return {"api": api, "category": "Books"} if req.get("response_format") else f"{api}: {last_user(req)}"

    assert is_gemini("gemini-2.5-flash") and is_gemini("models/gemini-pro") and not is_gemini("gemini-2.5-flash", "http://x/v1")
    assert openai_key() == "EMPTY"
    with ScriptedServer(replies, api_key="k2") as srv:
        with pytest.raises(CredentialsError, match="GEMINI_API_KEY"):
            chat("gemini-2.5-flash", "hi")                        # no key: refused before any request
        with pytest.raises(CredentialsError, match="VLLM_API_KEY"):
            chat("served", "hi", base_url=srv.base_url)          # 'EMPTY' refused by a server started with a key
        with pytest.raises(ValueError, match="base_url"):
            chat("qwen", "hi")
        n = len(srv.requests)
        clean_env.setenv("VLLM_API_KEY", "k2")
        clean_env.setenv("GEMINI_API_KEY", "k2")
        clean_env.setenv("GOOGLE_GEMINI_BASE_URL", srv.root)     # google-genai's own setting: Gemini's API is the script
        assert chat("served", "hi", base_url=srv.base_url) == "openai-api: hi"
        assert srv.requests[-1] == {"model": "served", "messages": [{"role": "user", "content": "hi"}], "temperature": 0,
                                    "max_completion_tokens": 1024}
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
        assert chat("gemini-2.5-flash", msgs, max_tokens=99) == "gemini-api: hi"
        assert srv.requests[-1]["messages"] == msgs and srv.requests[-1]["max_tokens"] == 99
        assert chat("gemini-2.5-flash", msgs, base_url=srv.base_url) == "openai-api: hi"   # a base URL: OpenAI-compatible
        rf = {"type": "json_schema", "json_schema": {"name": "filters", "schema": SCHEMA}}
        assert json.loads(chat("gemini-2.5-flash", "filters?", response_format=rf)) == {"api": "gemini-api", "category": "Books"}
        assert srv.requests[-1]["gemini"]["generationConfig"]["responseJsonSchema"] == SCHEMA
        clean_env.setenv("GEMINI_API_KEY", "wrong")
        with pytest.raises(CredentialsError, match="GEMINI_API_KEY"):
            chat("gemini-2.5-flash", "hi")
    assert n == 1 and len(srv.requests) == n + 5          # the refused key was asked once (a 401 is not retried)


# ── the layers above, through the same server ────────────────────────────────

def page_text(req):
    c = [m for m in req["messages"] if m["role"] == "user"][-1]["content"]
    return c if isinstance(c, str) else "\n".join(p.get("text", "") for p in c if p.get("type") == "text")


def shop_specialist(req):
    "Select Books in the category dropdown by the index browser-use lists it under, then say done."
    page = page_text(req)
    step = lambda name, params: {"evaluation_previous_goal": "", "memory": "", "next_goal": name, "action": [{name: params}]}
    if "category=Books" in re.search(r"Tab \w+: (\S+)", page).group(1):
        return step("done", {"text": "Showing Books only.", "success": True})
    index = int(re.search(r"\[(\d+)\]<select[^\n]*\bname=category\b", page).group(1))
    return step("select_dropdown", {"index": index, "text": "Books"})


def test_make_llm_drives_an_agent_step_on_miniweb(base):
    "harness.make_llm (browser-use's ChatOpenAI) against the script: one real select in Chromium, seen by MiniWeb."
    async def run(llm):
        task = {"start": {"url": "/sites/shop/products"}, "control": {"role": "target", "prep": {}}}
        async with H.browser(base, task) as bs:
            agent = H.Agent(task=H.instruction("Show only the books.", HS.start_url(base, task)), llm=llm, browser_session=bs,
                            tools=HA.make_tools(), max_failures=2, **H.AGENT_KWARGS)
            return await agent.run(max_steps=4), (await HS.admin_get(bs, base, "/_admin/log"))["entries"]

    with ScriptedServer({"shop-lora": shop_specialist}) as srv, HO.loopback_only() as hits:
        hist, log = asyncio.run(run(H.make_llm("shop-lora", srv.base_url, max_tokens=512)))
    assert hist.is_successful() and hist.final_result() == "Showing Books only.", hist.errors()
    assert any(e["path"] == "/sites/shop/products" and e["query"].get("category") == "Books" for e in log), log
    assert len(srv.requests) == 2 and all(r["model"] == "shop-lora" and r["max_completion_tokens"] == 512 for r in srv.requests)
    assert srv.requests[0]["response_format"]["type"] == "json_schema" and not hits


def test_memory_model_merges_or_falls_back():
    "replay.configure_memory + plan_data.merge_all: a rewrite that keeps every value is used, one that drops one is not."
    parts = ["Filter by Books.", "Sort by price."]
    replies = ["Show only Books, sorted by price.", "Show only the cheapest things."]
    with ScriptedServer({"memory": replies}) as srv:
        try:
            assert R.configure_memory(srv.base_url, "memory")["model"] == "memory"
            async def twice():                                   # one event loop: the memory client is async
                return [await P.merge_all(parts), await P.merge_all(parts)]
            assert asyncio.run(twice()) == [("Show only Books, sorted by price.", "merged"),
                                            ("Filter by Books. Then sort by price.", "joined")]
        finally:
            R.configure_memory()
    assert asyncio.run(P.merge_all(parts)) == ("Filter by Books. Then sort by price.", "joined")   # no model: joined
    assert len(srv.requests) == 2 and "1. Filter by Books.\n2. Sort by price." in last_user(srv.requests[0])


def test_judge_tier_through_the_server(monkeypatch):
    "checks' LLM tier (WEBMIX_JUDGE_MODEL + WEBMIX_JUDGE_URL) answered by the script when the matchers fail."
    spec = {"matchers": [{"tier": "exact", "value": "42"}], "llm": {"expected": "42"}}
    with ScriptedServer({"judge": ["YES, forty-two is 42.", "NO, 41 is not 42."]}) as srv:
        monkeypatch.setenv("WEBMIX_JUDGE_MODEL", "judge")
        monkeypatch.setenv("WEBMIX_JUDGE_URL", srv.base_url)
        yes = checks.grade_answer(spec, "forty-two", "How many?")
        no = checks.grade_answer(spec, "41", "How many?")
    assert yes["passed"] and yes["tier"] == "llm" and not no["passed"]
    assert "forty-two" in last_user(srv.requests[0])


def test_memory_model_replies_come_from_the_cache_the_second_time(tmp_path):
    "configure_memory(cache=DIR): a request seen before is answered from the folder, with the server stopped too."
    parts = ["Filter by Books.", "Sort by price."]
    cache = tmp_path / "replies"
    with ScriptedServer({"memory": ["Show only Books, sorted by price.", "Show only the cheapest things."]}) as srv:
        try:
            R.configure_memory(srv.base_url, "memory", cache)
            async def twice(): return [await P.merge_all(parts), await P.merge_all(parts)]
            first, second = asyncio.run(twice())
        finally: R.configure_memory()
    assert first == second == ("Show only Books, sorted by price.", "merged") and len(srv.requests) == 1
    try:                                                          # the server is gone: the cache still answers
        R.configure_memory(srv.base_url, "memory", cache)
        assert asyncio.run(P.merge_all(parts)) == first
    finally: R.configure_memory()
    with ScriptedServer({"memory": ["Show only the cheapest things."]}) as other:
        try:                                                      # another folder: asked again, a wrong rewrite refused
            R.configure_memory(other.base_url, "memory", tmp_path / "other")
            assert asyncio.run(P.merge_all(parts)) == ("Filter by Books. Then sort by price.", "joined")
        finally: R.configure_memory()
    assert len(other.requests) >= 1


def test_cache_keys_rename_the_browsers_ids_but_not_the_system_prompts_prose():
    "Two runs of one episode differ in node ids only: their keys agree; the system prompt's 'index 15' is left as written."
    from webmix.agents.calls import BrowserNames, request_key
    system = {"role": "system", "content": "Example: Clicked the submit button with index 15."}
    def request(a, b):
        return {"model": "m", "messages": [system, {"role": "user", "content": f"[{a}]<input /> [{b}]<a /> Type into the field [{a}]."}]}
    one, two = request(977, 15), request(15, 1203)            # the second browser drew other ids, one of them 15
    k1, k2 = (request_key(BrowserNames(r).keyed(r)) for r in (one, two))
    assert k1 == k2 and BrowserNames(one).keyed(one)["messages"][0] == system
    assert request_key(BrowserNames(request(977, 16)).keyed(request(977, 16))) == k1
    other = {"model": "m", "messages": [system, {"role": "user", "content": "[977]<input /> [15]<a /> Type into the link [15]."}]}
    assert request_key(BrowserNames(other).keyed(other)) != k1          # another element named: another request
    # a stored reply's text names ids as the prompt's names; played back, as this browser's
    stored = BrowserNames(one).reply('{"memory": "typed into [977]", "action": [{"click": {"index": 15}}]}', stored=True)
    assert json.loads(stored) == {"memory": "typed into [#1]", "action": [{"click": {"index": 2}}]}
    assert json.loads(BrowserNames(two).reply(stored, stored=False)) == {"memory": "typed into [15]", "action": [{"click": {"index": 1203}}]}


def test_a_blinking_caret_does_not_change_a_screenshots_key():
    "Two screenshots a text caret's 1-pixel line apart share a cache key; a changed part of the page does not."
    import base64, io
    from PIL import Image, ImageDraw
    from webmix.agents.calls import image_key
    def url(draw_more=None):
        im = Image.new("RGB", (1280, 900), "white")
        d = ImageDraw.Draw(im)
        d.rectangle([900, 210, 1100, 240], outline="black")           # a text field
        d.text((905, 215), "Northgate Lettings", fill="black")
        if draw_more: draw_more(d)
        buf = io.BytesIO(); im.save(buf, "PNG")
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    plain = image_key(url())
    assert image_key(url(lambda d: d.line([(1003, 221), (1003, 235)], fill="black"))) == plain        # the caret, on
    assert image_key(url(lambda d: d.rectangle([600, 400, 640, 440], fill="black"))) != plain         # another page

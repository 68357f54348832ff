"""`deadline-audit report` on the demo fixture: the HTML and Markdown reviews carry the
inventory rows, values, lease arithmetic and findings the graph and checks computed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis_support import FIXTURES
from da_cli_support import run_cli
from report_support import md_section, md_tables, parse_html, table_rows

DEMO = FIXTURES / "demo"
HAS_DOT = shutil.which("dot") is not None


@pytest.fixture
def in_demo(monkeypatch):
    monkeypatch.chdir(DEMO)


def _report(tmp_path: Path, name: str, *extra: str) -> tuple[str, object]:
    out = tmp_path / name
    result = run_cli("report", ".", "--no-cache", "-o", str(out), *extra)
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8"), result


@pytest.fixture(scope="module")
def demo_reports(tmp_path_factory):
    """The demo's review in both forms, generated once for the module's read-only tests."""
    out = tmp_path_factory.mktemp("review")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(DEMO)
        html, _ = _report(out, "review.html")
        md, _ = _report(out, "review.md")
    return html, md


@pytest.fixture(scope="module")
def demo_json():
    import json

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(DEMO)
        result = run_cli("check", ".", "--no-cache", "--format", "json")
    return json.loads(result.output)


@pytest.fixture
def html_text(demo_reports):
    return demo_reports[0]


@pytest.fixture
def html_doc(demo_reports):
    return parse_html(demo_reports[0])


@pytest.fixture
def markdown(demo_reports):
    return demo_reports[1]


def _inventory(doc):
    return table_rows(doc.find("table", id="inventory-table"))


def _row(rows, site_text: str):
    return next(r for r in rows if site_text in r["Site"].norm())


# -- HTML ------------------------------------------------------------------------------

def test_html_is_one_self_contained_file(html_doc, html_text):
    for el in html_doc.iter():
        assert el.tag not in ("link", "img", "iframe", "object"), el.tag
        assert "src" not in el.attrs, el
        for key in ("href", "xlink:href"):
            assert not el.attrs.get(key, "").startswith(("http:", "https:", "//")), el.attrs
    assert "url(" not in html_text and "@import" not in html_text
    assert html_doc.find("style") is not None
    assert [s.attrs["id"] for s in html_doc.find_all("section")] == [
        "summary", "inventory", "supervision", "findings", "graph"]
    # filtering controls are hidden until the script shows them: the page reads without JS
    assert "hidden" in html_doc.find("div", id="inventory-controls").attrs


def test_html_summary_counts_rules_components_and_env_layers(html_doc):
    summary = html_doc.find("section", id="summary")
    by_rule = {r["Rule"].norm(): (r["Severity"].norm(), r["Findings"].norm())
               for r in table_rows(summary.find("table", class_="by-rule"))}
    # every implemented rule is listed, those without findings too (the review says what was checked)
    assert set(by_rule) == {"DA101", "DA102", "DA103", "DA201", "DA202", "DA301", "DA302", "DA401", "DA402",
                            "DA403", "DA501", "DA502"}
    # DA502: MODEL_TIMEOUT is deployed as 30m against the compiled 120 s
    assert {rid: v for rid, v in by_rule.items() if v[1] != "0"} == {
        "DA101": ("error", "3"), "DA201": ("error", "1"), "DA502": ("info", "1")}
    assert by_rule["DA401"] == ("error", "0") and by_rule["DA301"] == ("warning", "0")
    assert [(c.find("b").norm(), c.find("span").norm())
            for c in summary.find("div", class_="cards").find_all("div", class_="card")][:3] == [
        ("4", "errors"), ("0", "warnings"), ("1", "info")]
    components = {r["Component"].norm(): (r["Files"].norm(), r["Timeout sites"].norm())
                  for r in table_rows(summary.find("table", class_="components"))}
    assert set(components) == {"engine", "service"}
    assert components["service"][0] == "6"
    env = {r["File"].norm(): r["Role"].norm() for r in table_rows(summary.find("table", class_="env-files"))}
    assert env == {"engine/.env": "layer 1 of 3", "service/.env": "layer 2 of 3",
                   "engine/config/.env": "layer 3 of 3", "engine/.env.example": "documentation only"}
    assert "None: every input was analysed." in summary.norm()


def test_html_inventory_model_timeout_row(html_doc):
    row = _row(_inventory(html_doc), "engine/internal/models/client.go:36")
    assert row["Site"].norm().startswith("http.Client.Timeout")
    assert row["Role"].norm() == "transport_deadline"
    assert row["Class"].norm() == "allocator"
    assert row["Effective"].norm() == "30 min" and row["Effective"].attrs["data-value"] == "1800"
    assert row["Compiled default"].norm() == "120 s"
    env = row["Knobs: where set"].norm()
    assert "$MODEL_TIMEOUT: engine/.env:4 = 30m; engine/config/.env:1 = 30m (wins)" in env
    assert "default 120 s engine/internal/config/env.go:41" in env
    assert row["Winning layer"].norm() == "engine/config/.env:1"
    assert row["Source chain"].norm() == ("$MODEL_TIMEOUT → envDuration default 120 s → config.Config.ModelTimeout "
                                          "→ models.Config.Timeout → http.Client.Timeout")
    assert row["Findings"].norm() == "DA101"
    target = row["Findings"].find("a").attrs["href"].lstrip("#")
    article = html_doc.find("article", id=target)
    assert "engine/internal/models/client.go:36:37" in article.find("h4").norm()


def test_html_inventory_classifies_every_site(html_doc):
    rows = _inventory(html_doc)
    by_site = {(r["Site"].find("code").norm()): (r["Role"].norm(), r["Class"].norm(), r["Effective"].norm(),
                                                 r["Winning layer"].norm()) for r in rows}
    assert by_site["engine/internal/agents/loop.go:44:8"] == ("lease", "detector", "30 min", "engine/config/.env:1")
    assert by_site["engine/internal/agents/loop.go:55:8"] == ("lease", "detector", "90 s", "engine/.env:3")
    # the lease helper's timer: armed per call with MODEL_TIMEOUT or TOOL_TIMEOUT, no single value
    assert by_site["engine/internal/agents/lease.go:28:25"] == ("timer", "detector", "unresolved",
                                                              "engine/.env:3, engine/config/.env:1")
    assert by_site["engine/cmd/engine/main.go:34:22"] == ("server_write_deadline", "allocator", "300 s", "code")
    assert by_site["service/service/llm.py:12:13"] == ("read_timeout", "allocator", "10 min", "service/.env:1")
    assert by_site["engine/internal/models/client.go:32:26"][:3] == ("phase_timeout", "allocator", "120 s")
    # terminal writes carry no duration: not timeouts
    assert not any("durable.go:27" in key for key in by_site)
    assert {r["Component"].norm() for r in rows} == {"engine", "service"}


def test_html_knobs_are_the_json_inventory(html_doc, demo_json):
    """The knob table is inventory.build_inventory, the same data as `check --format json`."""
    rows = table_rows(html_doc.find("table", class_="knobs"))
    knobs = {r["Knob"].find("b").norm(): r for r in rows}
    inventory = {f"${e['name']}": e for e in demo_json["inventory"]
                 if e["kind"] == "env" and (e["sites"] or e["timeout_like"])}
    assert set(knobs) == set(inventory) == {"$MODEL_TIMEOUT", "$TOOL_TIMEOUT", "$SUMMARY_MODEL_TIMEOUT",
                                            "$SUMMARY_LEASE_SECONDS"}
    model = knobs["$MODEL_TIMEOUT"]
    assert model["Effective"].norm() == "30 min (30m)" and model["Effective"].attrs["data-value"] == "1800"
    assert model["Winning layer"].norm() == "engine/config/.env:1"
    assert model["Set in (layers, profiles, config)"].norm() == "engine/.env:4 = 30m engine/config/.env:1 = 30m (wins)"
    assert model["Read at, compiled default"].norm() == "engine/internal/config/env.go:41 default 120 s"
    assert "documented in engine/.env.example:2" in model["Knob"].norm()
    reached = {(s["path"], s["line"]) for s in inventory["$MODEL_TIMEOUT"]["sites"]}
    assert len(reached) == 6 and model["Timeout sites reached"].attrs["data-value"] == "6"
    for path, line in reached:
        assert f"{path}:{line}" in model["Timeout sites reached"].norm()
    assert "http.Client.Timeout engine/internal/models/client.go:36" in model["Timeout sites reached"].norm()
    tool = knobs["$TOOL_TIMEOUT"]  # 90s is 90 s: the raw text is not repeated
    assert (tool["Effective"].norm(), tool["Read at, compiled default"].norm()) == (
        "90 s", "engine/internal/config/env.go:42 default 45 s")
    lease = knobs["$SUMMARY_LEASE_SECONDS"]
    assert (lease["Effective"].norm(), lease["Winning layer"].norm()) == ("10 min (600)", "service/.env:2")


def test_config_keys_and_unread_knobs_in_the_knob_table(tmp_path, monkeypatch):
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "main.py").write_text(
        "import os\nimport yaml\n\nCONF = yaml.safe_load(open('settings.yaml'))\n"
        "POLL = float(os.environ.get('POLL_TIMEOUT', '5'))\n", encoding="utf-8")
    (tmp_path / "svc" / "settings.yaml").write_text("worker:\n  stall_timeout: 5m\n", encoding="utf-8")
    (tmp_path / "svc" / ".env").write_text("DRAIN_TIMEOUT=45s\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    text, _ = _report(tmp_path, "review.html", "svc")
    knobs = {r["Knob"].find("b").norm(): r for r in table_rows(parse_html(text).find("table", class_="knobs"))}
    drain = knobs["$DRAIN_TIMEOUT"]  # set, read nowhere (DA501)
    assert (drain["Effective"].norm(), drain["Winning layer"].norm(), drain["Read at, compiled default"].norm()) == (
        "45 s", "svc/.env:1", "not read")
    poll = knobs["$POLL_TIMEOUT"]  # read, set nowhere: the compiled default is in force
    assert (poll["Effective"].norm(), poll["Winning layer"].norm(), poll["Set in (layers, profiles, config)"].norm(),
            poll["Read at, compiled default"].norm()) == (
        "5 s (compiled default)", "compiled default", "not set", "svc/main.py:5 default 5 s")
    stall = knobs["worker.stall_timeout"]  # a key of the config file the program loads
    assert (stall["Effective"].norm(), stall["Winning layer"].norm(),
            stall["Set in (layers, profiles, config)"].norm()) == ("300 s (5m)", "svc/settings.yaml:2", "svc/settings.yaml:2 = 5m")


def _leases(doc):
    table = doc.find("table", class_="supervision")
    rows = table.find("tbody").find_all("tr")
    out = {}
    for lease, verdict in zip(rows[::2], rows[1::2]):
        cells = lease.find_all("td")
        name = cells[0].find("b").norm()
        out[name] = {"L": cells[1].children[0].strip(), "R": cells[2].children[0].strip(),
                     "C": cells[3].children[0].strip(), "T": cells[4].children[0].strip(),
                     "A": cells[5].children[0].strip(), "at most": cells[6].norm(), "sentence": verdict.norm()}
    return out


def test_html_lease_arithmetic(html_doc):
    leases = _leases(html_doc)
    assert set(leases) == {"plan", "model_call", "tool_call", "run_with_lease"}
    model = leases["model_call"]
    assert (model["L"], model["R"], model["C"], model["T"], model["A"], model["at most"]) == (
        "30 min", "3", "2 h", "30 min", "1 inside", "30 min")
    assert "the lease never renews" in model["sentence"]
    plan = leases["plan"]  # openai-go: 30 min per attempt, 2 retries inside the lease, cap 2 h
    assert (plan["T"], plan["A"], plan["at most"]) == ("30 min", "3 inside", "1 h 30 min")
    assert "at most 1 h 30 min plus backoff" in plan["sentence"]
    assert "renewals past 1 h 30 min never happen" in plan["sentence"]
    tool = leases["tool_call"]  # nothing hard on the path: the supervisor's cap decides
    assert (tool["L"], tool["C"], tool["T"], tool["at most"]) == ("90 s", "6 min", "∞", "6 min")
    py = leases["run_with_lease"]  # max_renewals=3 from the parameter's default
    assert (py["L"], py["R"], py["C"], py["T"], py["A"], py["at most"]) == (
        "10 min", "3", "40 min", "10 min", "3 inside", "30 min")


def test_html_findings_with_evidence_and_advice(html_doc):
    section = html_doc.find("section", id="findings")
    # grouped by rule: the rule's name, count and summary, its advice once, then its findings
    assert [h.norm() for h in section.find_all("h3", class_="rule")] == [
        "error DA101 shadowed-lease · 3 findings", "error DA201 cancellable-terminal-write · 1 finding",
        "info DA502 default-drift · 1 finding"]
    assert [d.find("summary").norm() for d in section.find_all("details", class_="use-instead")] == [
        "Use instead (DA101 documentation)", "Use instead (DA201 documentation)", "Use instead (DA502 documentation)"]
    articles = section.find_all("article")
    heads = sorted(a.find("h4").find("code").norm() for a in articles)
    assert heads == ["engine/config/.env:1:1", "engine/internal/models/client.go:36:37",
                     "engine/internal/models/openai.go:20:29", "engine/internal/turns/legacy.go:39:7",
                     "service/service/llm.py:12:13"]
    client = next(a for a in articles if "client.go:36" in a.find("h4").norm())
    assert client.find("h4").norm().startswith("DA101 —")
    assert "httpClient: &http.Client{Timeout: config.Timeout" in client.find("mark").norm()
    flow = [li.norm() for li in client.find("div", class_="flow").find_all("li")]
    assert flow[0].startswith("MODEL_TIMEOUT = 30 min")
    assert "engine/config/.env:1 = 30m (wins)" in flow[0]
    assert flow[-1].startswith("http.Client.Timeout = 30 min")
    assert "model_call lease set here (30 min)" in client.find("div", class_="related").norm()
    advice = section.find("details", class_="use-instead")
    assert advice.find("pre") is not None  # the rule's good example


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
def test_html_embeds_one_svg_per_component(html_doc):
    figures = html_doc.find("section", id="graph").find_all("figure")
    assert [f.find("figcaption").find("b").norm() for f in figures] == ["engine", "service"]
    for figure in figures:
        svg = figure.find("svg")
        assert svg is not None
        assert svg.find_all("g", class_="cluster")  # packages drawn as clusters
    engine_svg = figures[0].find("svg").norm()
    assert "http.Client.Timeout" in engine_svg and "$MODEL_TIMEOUT = 30m" in engine_svg


def test_html_without_dot_embeds_mermaid(in_demo, tmp_path, monkeypatch):
    from deadline_audit.report import review_graph

    monkeypatch.setattr(review_graph, "dot_available", lambda: None)
    text, _ = _report(tmp_path, "review.html")
    graph = parse_html(text).find("section", id="graph")
    assert graph.find("svg") is None
    assert "Graphviz `dot` is not installed" in graph.norm()
    mermaid = graph.find("pre", class_="mermaid").norm()
    assert mermaid.startswith("flowchart LR") and "http.Client.Timeout" in mermaid


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` is not installed (apt-get install graphviz)")
def test_large_graph_is_cut_to_findings_with_the_full_svg_beside(in_demo, tmp_path, monkeypatch):
    from deadline_audit.report import review_graph

    monkeypatch.setattr(review_graph, "NODE_LIMIT", 20)
    text, _ = _report(tmp_path, "review.html")
    engine = parse_html(text).find("section", id="graph").find_all("figure")[0]
    assert "the picture is cut" in engine.norm()
    link = engine.find("a")
    assert link.attrs["href"] == "review-engine-graph.svg"
    full = (tmp_path / "review-engine-graph.svg").read_text(encoding="utf-8")
    assert full.lstrip().startswith("<svg") and "http.Server.ReadHeaderTimeout" in full
    shown = engine.find("svg").norm()
    assert "http.Client.Timeout" in shown and "http.Server.ReadHeaderTimeout" not in shown


# -- Markdown ------------------------------------------------------------------------

def test_markdown_has_the_same_sections(markdown):
    titles = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    assert titles == ["Summary", "Timeout inventory", "Supervision arithmetic", "Findings", "Timeout-flow graph"]
    assert "```mermaid\nflowchart LR" in markdown


def test_markdown_inventory_and_leases(markdown):
    inventory = md_tables(md_section(markdown, "Timeout inventory"))[0]
    row = next(r for r in inventory if "`engine/internal/models/client.go:36`" in r["Site"])
    assert (row["Role"], row["Class"], row["Effective"], row["Compiled default"], row["Winning layer"]) == (
        "transport_deadline", "allocator", "30 min", "120 s", "engine/config/.env:1")
    assert "`engine/config/.env:1` = 30m (wins)" in row["Knobs: where set"]
    assert row["Source chain"].startswith("$MODEL_TIMEOUT → envDuration default 120 s → config.Config.ModelTimeout")
    assert row["Findings"] == "DA101"
    section = md_section(markdown, "Supervision arithmetic")
    (leases,) = md_tables(section)
    model = next(r for r in leases if r["Lease"].startswith("**model_call**"))
    assert (model["L"], model["R"].split(" (")[0], model["C"].split(" (")[0], model["T"].split(" (")[0],
            model["At most"]) == ("30 min", "3", "2 h", "30 min", "**30 min**")
    assert ("- **plan** (`engine/internal/agents/loop.go:34`): L 30 min, R 3, C 2 h, T 30 min, A 3 inside ⇒ "
            "at most 1 h 30 min plus backoff") in section


def test_markdown_knobs(markdown):
    tables = md_tables(md_section(markdown, "Timeout inventory"))
    knobs = {r["Knob"]: r for r in tables[1]}
    assert set(knobs) == {"$MODEL_TIMEOUT", "$TOOL_TIMEOUT", "$SUMMARY_MODEL_TIMEOUT", "$SUMMARY_LEASE_SECONDS"}
    tool = knobs["$TOOL_TIMEOUT"]
    assert (tool["Effective"], tool["Winning layer"], tool["Set in (layers, profiles, config)"]) == (
        "90 s", "engine/.env:3", "`engine/.env:3` = 90s (wins)")
    assert tool["Read at, compiled default"] == "`engine/internal/config/env.go:42` default 45 s"
    assert tool["Timeout sites reached"].split("<br>") == [
        "time.NewTimer `engine/internal/agents/lease.go:28`", "time.Timer.Reset `engine/internal/agents/lease.go:39`",
        "lease `engine/internal/agents/loop.go:55`"]


def test_markdown_findings(markdown):
    section = md_section(markdown, "Findings")
    assert [line for line in section.splitlines() if line.startswith("### ")] == [
        "### 🔴 DA101 shadowed-lease (3 findings)", "### 🔴 DA201 cancellable-terminal-write (1 finding)",
        "### 🔵 DA502 default-drift (1 finding)"]
    heads = sorted(line.split("`")[1] for line in section.splitlines() if line.startswith("#### DA"))
    assert heads == ["engine/config/.env:1:1", "engine/internal/models/client.go:36:37",
                     "engine/internal/models/openai.go:20:29", "engine/internal/turns/legacy.go:39:7",
                     "service/service/llm.py:12:13"]
    assert "<summary>Use instead (DA201 documentation)</summary>" in section


# -- command line --------------------------------------------------------------------

def test_format_from_suffix_or_option(in_demo, tmp_path):
    text, _ = _report(tmp_path, "review.txt", "--format", "markdown")
    assert text.startswith("# Timeout architecture review: demo")
    result = run_cli("report", ".", "--no-cache", "-o", str(tmp_path / "review.txt"))
    assert result.exit_code == 2
    assert "name it .html or .md" in result.output


def test_select_and_env_file_apply_as_in_check(in_demo, tmp_path):
    text, _ = _report(tmp_path, "review.md", "--select", "DA201", "--env-file", "engine/.env")
    summary = md_section(text, "Summary")
    assert "| DA201 | cancellable-terminal-write | 🔴 error | 1 |" in summary
    assert "| DA101 | shadowed-lease | 🔴 error | not selected |" in summary
    assert "`engine/.env` | layer 1 of 1" in summary  # --env-file replaces .env discovery


def test_bad_inputs_are_listed_and_the_review_still_written(tmp_path, monkeypatch):
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "main.go").write_text("package main\n\nfunc {\n", encoding="utf-8")
    (tmp_path / "svc" / ".env").write_text("WORKER_TIMEOUT=5m\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    text, result = _report(tmp_path, "review.html", "svc")
    doc = parse_html(text)
    errors = doc.find("ul", class_="errors")
    assert errors is not None and "svc/main.go:3" in errors.norm()
    assert "No timeout site found." in doc.find("section", id="inventory").norm()
    assert "svc/main.go:3" in result.output  # and on stderr, as `check` does


# -- wire and ceiling evidence (DA4xx) ---------------------------------------------------

def test_ceiling_findings_show_both_sides_and_their_knobs(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES / "da401")
    text, _ = _report(tmp_path, "review.html")
    doc = parse_html(text)
    by_rule = {r["Rule"].norm(): r["Findings"].norm() for r in table_rows(doc.find("table", class_="by-rule"))}
    assert by_rule["DA401"] == "7" and by_rule["DA101"] == "0"
    knobs = {r["Knob"].find("b").norm(): r for r in table_rows(doc.find("table", class_="knobs"))}
    # sent across a wire to a clamp: no graph edge reaches a site, the finding's flow does
    archive = knobs["$ARCHIVE_WAIT_S"]
    assert (archive["Effective"].norm(), archive["Winning layer"].norm()) == ("30 min (1800)", "studio/.env:1")
    assert archive["Timeout sites reached"].norm() == "clamp farm-agent/internal/job/job.go:34 (DA401 flow)"
    article = next(a for a in doc.find("section", id="findings").find_all("article")
                   if "studio/.env:1:1" in a.find("h4").norm())
    flow = [li.norm() for li in article.find("div", class_="flow").find_all("li")]
    assert flow[0].startswith("ARCHIVE_WAIT_S = 30 min") and "studio/.env:1 = 1800 (wins)" in flow[0]
    assert flow[-1].startswith("clamp [min] = 10 min")
    related = article.find("div", class_="related").find_all("li")
    assert [li.find("pre", class_="line") is not None for li in related] == [True] * len(related)


def test_wire_findings_quote_the_other_side(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES / "da403")
    html, _ = _report(tmp_path, "review.html")
    article = next(a for a in parse_html(html).find("section", id="findings").find_all("article")
                   if "panel/panel/acks.py:7:5" in a.find("h4").norm())
    (sender,) = article.find("div", class_="related").find_all("li")
    assert sender.find("code").norm() == "relay/internal/report/ack.go:9:2"
    assert sender.find("pre", class_="line").norm() == 'Budget time.Duration `json:"budget"`'
    markdown, _ = _report(tmp_path, "review.md")
    assert ("- `relay/internal/report/ack.go:9` the sender's field: `` Budget time.Duration `json:\"budget\"` ``"
            in md_section(markdown, "Findings"))


def test_outcome_findings_quote_declarations_not_lines_the_snippet_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES / "da302")
    html, _ = _report(tmp_path, "review.html")
    article = next(a for a in parse_html(html).find("section", id="findings").find_all("article")
                   if "go/rpc/ops.go:25:3" in a.find("h4").norm())
    related = {li.find("code").norm(): li.find("pre", class_="line") for li in
               article.find("div", class_="related").find_all("li")}
    assert related["go/rpc/ops.go:24:2"] is None  # the timeout branch: in the snippet above
    assert related["go/rpc/ops.go:13:2"].norm() == 'OpFailed OperationStatus = "FAILED"'
    assert related["go/rpc/ops.go:14:2"].norm() == 'OpLost OperationStatus = "LOST"'


def test_the_review_says_how_many_test_files_were_read_for_names_only(tmp_path, monkeypatch):
    shutil.copytree(FIXTURES / "test_code" / "relay", tmp_path / "relay")
    monkeypatch.chdir(tmp_path / "relay")
    text, _ = _report(tmp_path, "review.md")
    assert "2 test files read for the names they spell only (`include-tests = true` analyses test code too)." in text
    inventory = md_section(text, "Timeout inventory")
    assert "keeper_test.go" not in inventory and "keeper.go" in inventory
    (tmp_path / "relay" / "deadline-audit.toml").write_text("include-tests = true\n", encoding="utf-8")
    text, _ = _report(tmp_path, "review.md")
    assert "read for the names they spell only" not in text
    assert "keeper_test.go" in md_section(text, "Timeout inventory")

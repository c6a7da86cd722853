#!/usr/bin/env python3
# The web UI in a real browser: headless Chromium driven by Selenium against a
# running kforge-server (+ kforge-worker) holding tests/web/seed.sql. Started by
# tests/web/browser_test.cpp (ctest -R web_browser), which makes the database,
# server, worker and tokens; exit 0 = passed, 1 = failed, 77 = skipped (reason printed).
#   python3 tests/web/browser_test.py --base-url http://127.0.0.1:PORT \
#       --submit-token kf_... --admin-token kf_... --artifacts build/test-artifacts/web
import argparse
import base64
import json
import os
import re
import shutil
import signal
import sys
import time
import traceback
import urllib.request

SKIP = 77

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError as error:  # reported as skipped by the C++ driver
    print(f"SKIP: selenium is not installed ({error}); scripts/install-deps.sh installs python3-selenium")
    sys.exit(SKIP)

DESKTOP = (1280, 860)
PHONE = (390, 844)
# Chrome logs a failed fetch as a console error; the refused bad op is expected.
EXPECTED_NETWORK = re.compile(r"/v1/generations - Failed to load resource: the server responded with a status of 422")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Browser:
    def __init__(self, base_url, artifacts):
        self.base = base_url.rstrip("/")
        self.artifacts = artifacts
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--no-first-run", "--disable-extensions", f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
                    "--force-color-profile=srgb", "--lang=en-US"]:
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(driver_path), options=options)
        self.driver.set_page_load_timeout(60)
        self.console_errors = []
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": self.base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})

    def quit(self):
        self.driver.quit()

    def api(self, path):
        with urllib.request.urlopen(self.base + path, timeout=30) as resp:
            return json.loads(resp.read())

    def open(self, hash_path):
        # A fresh page load each time (going from #/a to #/a would not reload).
        self.driver.get("about:blank")
        self.driver.get(f"{self.base}/#{hash_path}")
        # The shell's module has run once the server status line is filled in.
        self.wait(lambda d: "checking" not in d.find_element(By.ID, "server-status").text, 30, "the app did not start")

    def go(self, hash_path):
        """Navigates inside the running app (no reload)."""
        self.driver.execute_script("location.hash = arguments[0]", hash_path)

    def wait(self, condition, timeout, message):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(condition)
        except TimeoutException:
            raise Failure(f"{message} (after {timeout} s)")

    def css(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def collect_console(self, step, allowed=None):
        for entry in self.driver.get_log("browser"):
            if entry.get("level") != "SEVERE":
                continue
            if allowed and allowed.search(entry.get("message", "")):
                continue
            self.console_errors.append(f"{step}: {entry.get('message')}")

    def screenshot(self, name, tall=0):
        """The top of the page; tall > 0 captures that many CSS pixels of it instead of the window."""
        os.makedirs(self.artifacts, exist_ok=True)
        self.js("document.activeElement && document.activeElement.blur && document.activeElement.blur(); window.scrollTo(0, 0)")
        path = os.path.join(self.artifacts, f"{name}.png")
        if not tall:
            self.driver.save_screenshot(path)
            return
        width, height = self.js("return [document.documentElement.clientWidth, document.documentElement.scrollHeight]")
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": min(height, tall), "scale": 1}})
        with open(path, "wb") as out:
            out.write(base64.b64decode(shot["data"]))

    def set_viewport(self, width, height, mobile=False):
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def set_dark(self, dark):
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
            "features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})

    def unlabelled_controls(self):
        """Form controls and canvases a screen reader could not name."""
        return self.js("""
          const bad = [];
          for (const el of document.querySelectorAll('input, select, textarea, button, canvas')) {
            if (el.closest('dialog:not([open])') || el.type === 'hidden') continue;
            const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') ||
                          el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent.trim());
            if (!named) bad.push(el.outerHTML.slice(0, 120));
          }
          return bad;""")


def page_ready(browser, selector, timeout=30, message=None):
    browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, selector), timeout, message or f"no {selector} on the page")


def canvas_has_ink(browser, canvas):
    """True when the chart drew something (some pixel is not transparent)."""
    return browser.js("""
      const c = arguments[0];
      const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let ink = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) ink++;
      return ink;""", canvas) > 200


# --- the checks, in the order they run ---------------------------------------

def leaderboard_renders_api_rows(b):
    rows = b.api("/v1/leaderboard/ops?limit=100")["data"]
    check(len(rows) >= 10, f"the seed should give at least 10 leaderboard rows, the API has {len(rows)}")
    b.open("/")
    page_ready(b, "section table tbody tr", message="no leaderboard rows rendered")
    # Cells by header name, so a new column does not shift what is read.
    column = """const table = arguments[0].closest('table');
      const idx = [...table.querySelectorAll('thead th')].findIndex(th => th.textContent.startsWith(arguments[1]));
      return idx < 0 ? null : arguments[0].cells[idx].textContent;"""
    body_rows = b.css("section table tbody tr")
    cells = [f"{b.js(column, tr, 'Op')}|{b.js(column, tr, 'Device')}" for tr in body_rows]
    want = {f"{r['op_name']}|{r['device']}" for r in rows}
    check(want == set(cells), f"page rows differ from the API: missing {sorted(want - set(cells))}, extra {sorted(set(cells) - want)}")
    headings = [h.text for h in b.css("main h2")]
    check(any("Level 1" in h for h in headings) and any("Level 2" in h for h in headings)
          and any("without a suite level" in h for h in headings), f"ops are not grouped by level: {headings}")
    check("not measured" in b.css("main")[0].text, "vs torch.compile should say 'not measured' when the API has no value")
    winners = [b.js(column, tr, "Winner") for tr in body_rows]
    want_winners = sorted("PyTorch eager (use it)" if r["eager_wins"] else "kernel" for r in rows)
    check(sorted(winners) == want_winners, f"the winner column differs from the API: {sorted(winners)} vs {want_winners}")
    best = max(rows, key=lambda r: r["speedup"])
    check(f"{best['speedup']:.2f}×" in b.css("main")[0].text, f"the best speedup {best['speedup']} is not shown")
    # Sorting: the op column ascending, then the speedup column descending.
    first_table = b.css("section table")[0]
    first_table.find_element(By.XPATH, ".//th[1]//button").click()
    names = b.js("return [...arguments[0].querySelectorAll('tbody tr')].map(tr => tr.cells[0].textContent)", first_table)
    check(names == sorted(names), f"sorting by op does not sort: {names}")
    check(first_table.find_element(By.XPATH, ".//th[1]").get_attribute("aria-sort") == "ascending", "aria-sort not set")
    b.screenshot("leaderboard")
    # Filters travel to the API and into the URL.
    Select(b.driver.find_element(By.ID, "f-level")).select_by_value("2")
    b.wait(lambda d: "level=2" in d.current_url, 10, "the level filter did not reach the URL")
    b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "section h2") and all(
        "Level 2" in h.text for h in d.find_elements(By.CSS_SELECTOR, "section h2")), 20, "the level filter did not narrow the rows")
    Select(b.driver.find_element(By.ID, "f-device")).select_by_value("NVIDIA H100 80GB HBM3")
    b.wait(lambda d: "device=" in d.current_url and all(
        "H100" in tr.text for tr in d.find_elements(By.CSS_SELECTOR, "section table tbody tr")), 20, "the device filter did not apply")
    b.collect_console("leaderboard")


def model_tab_shows_evaluations(b):
    b.open("/models")
    page_ready(b, "table tbody tr", message="no model rows")
    text = b.css("main")[0].text
    check("kforge-tiny@2" in text and "kforge-tiny@1" in text, "model versions missing from the Models tab")
    check("27.6%" in text and "(14.0%–46.0%)" in text, "pass@1 with its interval is not shown")
    check("pass@1" in text and "Rule violations" in text, "the pass@1 and rule-violation columns are missing")
    check("38.4%" in text and "(25.0%–52.0%)" in text, "the rule-violation rate with its interval is not shown")
    check("21.0%" in text, "an evaluation stored before pass_at_1 existed shows its fast_0 as pass@1")
    b.screenshot("models")
    b.collect_console("models")


def op_page_shows_reference_best_kernel_and_candidates(b):
    b.open("/ops/1")
    page_ready(b, "figure.code.best[data-highlighted='true']", message="no highlighted best kernel on the op page")
    check(b.css("figure.code[data-highlighted='true'] code.language-python"), "the reference source is not highlighted")
    best = b.css("figure.code.best")[0]
    check(best.find_elements(By.CSS_SELECTOR, "code .hljs-keyword, code .hljs-type, code .hljs-built_in, code .hljs-comment"),
          "the best kernel has no highlighting spans")
    check("4096×2048" in b.css("main")[0].text, "input shapes are missing")
    page_ready(b, "table tbody tr td .badge-compile_error", message="failed candidates are not listed")
    rows = b.css("section[aria-labelledby='candidates'] table tbody tr")
    check(len(rows) == 12, f"op 1 has 12 candidates in the seed, the page lists {len(rows)}")
    check("use of undeclared identifier" in b.css("main")[0].text, "the harness message is not shown")
    canvas = b.css("section[aria-labelledby='candidates'] canvas")[0]
    b.wait(lambda d: canvas_has_ink(b, canvas), 20, "the candidates' speedup chart is blank")
    best.find_element(By.CSS_SELECTOR, "button.copy").click()
    b.wait(lambda d: best.find_element(By.CSS_SELECTOR, "button.copy").text in ("Copied", "Selected: press Ctrl+C"), 5,
           "the copy button did nothing")
    b.screenshot("op", tall=1400)
    b.collect_console("op")
    # scaled_tanh's kernel on the slow box runs at 0.2x eager: its per-device row names eager.
    b.open("/ops/7")
    page_ready(b, "figure.code.best", message="no best kernel on op 7's page")
    b.wait(lambda d: any("pthread-slow-box" in tr.text and "PyTorch eager (use it)" in tr.text
                         for tr in d.find_elements(By.CSS_SELECTOR, "table tbody tr")), 20,
           "the per-device table does not name PyTorch eager the winner on the slow box")
    b.collect_console("op 7")


def training_page_draws_charts(b):
    b.open("/training/902")
    page_ready(b, "#chart-loss-canvas canvas", message="no loss chart")
    for key in ["loss", "reward_mean", "correct_rate", "mean_speedup_correct", "kl", "rule_violation_rate"]:
        canvas = b.css(f"#chart-{key}-canvas canvas")
        check(canvas, f"no chart for {key}")
        b.wait(lambda d: canvas_has_ink(b, canvas[0]), 20, f"the {key} chart is blank")
        label = canvas[0].get_attribute("aria-label")
        check("80 points" in label, f"the {key} chart's label does not describe the 80 seeded steps: {label}")
    text = b.css("main")[0].text
    check("checkpoint" in text.lower() and "kforge-tiny@2" in text, "checkpoints are not listed")
    check("group dropped" in text, "events are not listed")
    b.screenshot("training", tall=1300)
    b.go("/training/901")
    b.wait(lambda d: "SFT does not record this" in d.find_element(By.TAG_NAME, "main").text, 20,
           "an SFT run should say which series it does not record")
    b.go("/training")
    page_ready(b, "table tbody tr a[href='#/training/902']", message="the training list does not link the runs")
    b.collect_console("training")


def jobs_page_filters(b):
    b.open("/jobs")
    page_ready(b, "table tbody tr", message="no jobs listed")
    check(b.css("table tbody progress"), "jobs show no progress bars")
    Select(b.driver.find_element(By.ID, "f-kind")).select_by_value("train_grpo")
    b.wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "table tbody tr")) == 1, 20, "the kind filter did not narrow the jobs")
    b.go("/jobs")
    page_ready(b, "table tbody tr", message="no jobs after clearing the filter")
    b.screenshot("jobs")
    b.collect_console("jobs")


def token_is_kept_and_workers_listed(b, admin_token):
    b.open("/workers")
    page_ready(b, "main .notice-info", message="without a token the workers page should say one is needed")
    b.driver.find_element(By.ID, "token-button").click()
    b.driver.find_element(By.ID, "token-input").send_keys(admin_token)
    b.driver.find_element(By.CSS_SELECTOR, "#token-form button[value='save']").click()
    b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "table tbody tr .badge-alive"), 30, "no alive worker listed")
    check(b.js("return localStorage.getItem('kforge.token')") == admin_token, "the token is not kept in localStorage")
    b.driver.refresh()
    page_ready(b, "table tbody tr .badge-alive", message="after a reload the token was forgotten")
    b.screenshot("workers")
    b.collect_console("workers")


def submit_errors_sit_next_to_fields(b, submit_token):
    b.open("/submit")
    b.js("localStorage.setItem('kforge.token', arguments[0])", submit_token)
    page_ready(b, "#f-source")
    b.driver.find_element(By.ID, "f-name").clear()
    b.driver.find_element(By.ID, "f-name").send_keys("bad_op")
    shape = b.css(".input-row [data-field='shape']")[0]
    shape.clear()
    shape.send_keys("0, 64")
    b.driver.find_element(By.ID, "f-submit").click()
    b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, ".input-row .field-error"), 60, "no field error next to the shape")
    error = b.js("const s = document.querySelector('.input-row [data-field=shape]'); "
                 "return [s.getAttribute('aria-invalid'), s.nextElementSibling && s.nextElementSibling.className, "
                 "s.nextElementSibling && s.nextElementSibling.textContent, document.activeElement === s]")
    check(error[0] == "true" and error[1] == "field-error", f"the shape error is not attached to the shape field: {error}")
    check(error[3], "focus did not move to the field with the error")
    b.collect_console("submit-bad-shape", EXPECTED_NETWORK)
    # A shape that parses, and TorchScript that does not compile: the probe's error goes next to the source.
    shape.clear()
    shape.send_keys("64, 64")
    source = b.driver.find_element(By.ID, "f-source")
    source.clear()
    source.send_keys("def forward(x: Tensor) -> Tensor:\n    return torch.relu(x) +\n")
    b.driver.find_element(By.ID, "f-submit").click()
    b.wait(lambda d: d.find_elements(By.ID, "f-source-error"), 90, "no field error next to the TorchScript")
    sibling = b.js("return document.getElementById('f-source').nextElementSibling.id")
    check(sibling == "f-source-error", f"the source error is not right after the source field ({sibling})")
    check(not b.css(".input-row .field-error"), "the fixed shape still shows its old error")
    b.screenshot("submit-errors")
    b.collect_console("submit-bad-source", EXPECTED_NETWORK)


def submit_relu(b, name, samples):
    """Submits the form's own example (relu on 64x64) and waits for its generation page."""
    b.open("/submit")
    page_ready(b, "#f-source")
    for field_id, value in (("f-name", name), ("f-samples", str(samples))):
        field = b.driver.find_element(By.ID, field_id)
        field.clear()
        field.send_keys(value)
    b.driver.find_element(By.ID, "f-submit").click()
    b.wait(lambda d: "/generations/" in d.current_url, 90, f"submitting {name} did not open its generation")


def good_op_is_followed_live_to_a_highlighted_kernel(b, submit_token):
    b.js("localStorage.setItem('kforge.token', arguments[0])", submit_token)
    submit_relu(b, "relu_small", 2)
    page_ready(b, ".status-line progress", message="the generation shows no progress bar")
    seen = set()
    deadline = time.time() + 300
    while time.time() < deadline:
        status = b.js("const s = document.querySelector('.status-line .badge'); return s ? s.textContent : ''")
        seen.add(status)
        if status in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.3)
    check(seen & {"queued", "running"}, f"the page never showed the job queued or running: {seen}")
    check(status == "succeeded", f"the generation ended {status or 'never'}: {b.css('main')[0].text[:600]}")
    page_ready(b, "#best-kernel[data-highlighted='true']", 30, "no highlighted best kernel after the generation")
    # Read in one script: the live page may render the result again after it finished, and an
    # element found first and queried after would then be stale (CI, 2026-11-29).
    code = b.js("const c = document.querySelector('#best-kernel code');"
                " return c ? {text: c.textContent, spans: c.querySelectorAll(\"span[class^='hljs-']\").length} : null")
    check(code is not None, "no best kernel code")
    check("__kernel" in code["text"], "the best kernel is not an OpenCL program")
    check(code["spans"] > 0, "the best kernel is not highlighted")
    check(b.css("table tbody tr .badge-correct"), "the arriving candidates are not listed")
    check(not b.css("#cancel"), "a finished generation still offers cancel")
    b.screenshot("generation", tall=1300)
    b.collect_console("generation")


def cancel_stops_a_generation(b):
    submit_relu(b, "relu_cancel", 64)
    page_ready(b, "#cancel", message="no cancel button on a live generation")
    b.driver.find_element(By.ID, "cancel").click()
    b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, ".status-line .badge-cancelled"), 120, "cancel did not stop the generation")
    b.collect_console("cancel")


def phone_layout_has_no_sideways_scroll(b, admin_token):
    b.js("localStorage.setItem('kforge.token', arguments[0])", admin_token)  # the workers page needs admin
    b.set_viewport(*PHONE, mobile=True)
    try:
        for name, path, ready in [("leaderboard", "/", "section table tbody tr"), ("models", "/models", "table tbody tr"),
                                  ("op", "/ops/1", "figure.code.best"), ("submit", "/submit", "#f-source"),
                                  ("jobs", "/jobs", "table tbody tr"), ("training", "/training/902", "#chart-loss-canvas canvas"),
                                  ("workers", "/workers", "table tbody tr")]:
            b.open(path)
            page_ready(b, ready, message=f"{name} did not render at phone width")
            time.sleep(0.3)
            widths = b.js("return [document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
            check(max(widths[0], widths[1]) <= widths[2], f"{name} scrolls sideways at {PHONE[0]} px: {widths}")
            unnamed = b.unlabelled_controls()
            check(not unnamed, f"{name} has controls without a label: {unnamed[:3]}")
            b.screenshot(f"phone-{name}")
            b.collect_console(f"phone-{name}")
    finally:
        b.set_viewport(*DESKTOP)


def dark_mode_follows_the_system(b):
    b.set_dark(True)
    try:
        b.open("/ops/1")
        page_ready(b, "figure.code.best[data-highlighted='true']")
        background = b.js("return getComputedStyle(document.body).backgroundColor")
        check(background in ("rgb(15, 19, 24)",), f"prefers-color-scheme: dark did not darken the page ({background})")
        b.screenshot("dark-op")
        b.open("/")
        page_ready(b, "section table tbody tr")
        b.screenshot("dark-leaderboard")
        b.set_viewport(*PHONE, mobile=True)
        b.open("/")
        page_ready(b, "section table tbody tr")
        b.screenshot("phone-dark-leaderboard")
        b.collect_console("dark")
    finally:
        b.set_dark(False)
        b.set_viewport(*DESKTOP)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--submit-token", required=True)
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--only", default="", help="run the checks whose name contains this")
    args = parser.parse_args()
    missing = [name for name in ("chromium", "chromedriver") if not shutil.which(name)]
    if missing:
        print(f"SKIP: {' and '.join(missing)} not found; scripts/install-deps.sh installs chromium and chromium-driver")
        return SKIP
    # SIGTERM (the C++ driver's timeout) unwinds through the finally below, which closes Chromium.
    signal.signal(signal.SIGTERM, lambda signo, frame: sys.exit(1))
    browser = Browser(args.base_url, args.artifacts)
    checks = [
        ("leaderboard_renders_api_rows", lambda: leaderboard_renders_api_rows(browser)),
        ("model_tab_shows_evaluations", lambda: model_tab_shows_evaluations(browser)),
        ("op_page_shows_reference_best_kernel_and_candidates", lambda: op_page_shows_reference_best_kernel_and_candidates(browser)),
        ("training_page_draws_charts", lambda: training_page_draws_charts(browser)),
        ("jobs_page_filters", lambda: jobs_page_filters(browser)),
        ("token_is_kept_and_workers_listed", lambda: token_is_kept_and_workers_listed(browser, args.admin_token)),
        ("submit_errors_sit_next_to_fields", lambda: submit_errors_sit_next_to_fields(browser, args.submit_token)),
        ("good_op_is_followed_live_to_a_highlighted_kernel", lambda: good_op_is_followed_live_to_a_highlighted_kernel(browser, args.submit_token)),
        ("cancel_stops_a_generation", lambda: cancel_stops_a_generation(browser)),
        ("phone_layout_has_no_sideways_scroll", lambda: phone_layout_has_no_sideways_scroll(browser, args.admin_token)),
        ("dark_mode_follows_the_system", lambda: dark_mode_follows_the_system(browser)),
    ]
    failures = []
    try:
        for name, run in checks:
            if args.only and args.only not in name:
                continue
            started = time.time()
            try:
                run()
                browser.collect_console(name)
                print(f"ok   {name} ({time.time() - started:.1f} s)", flush=True)
            except Exception as error:  # one failed check must not hide the others
                failures.append(name)
                detail = str(error) if isinstance(error, Failure) else traceback.format_exc()
                print(f"FAIL {name}: {detail}", flush=True)
                try:
                    browser.screenshot(f"failed-{name}")
                    browser.collect_console(name)
                except Exception:
                    pass
        if browser.console_errors:
            failures.append("no_console_errors")
            print("FAIL no_console_errors:\n  " + "\n  ".join(browser.console_errors), flush=True)
        else:
            print("ok   no_console_errors (every page, read from the browser log)", flush=True)
    finally:
        browser.quit()
    print(f"screenshots in {args.artifacts}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

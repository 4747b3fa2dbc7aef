#!/usr/bin/python3
"""ui_console.py: drives the console (api/ui, issue 22) in headless
Chromium through Selenium, against the stack tests/ui_console.sh started.

Each check is printed as one line, CHECK<TAB>name<TAB>got<TAB>want, for
the shell to count (ok in itest-lib.sh).  A screenshot of every page goes
into $CV_UI_SHOTS.  Every wait is bounded (WebDriverWait); nothing sleeps
and hopes.

Environment: CRONVISOR_URL, CV_TOKEN_ALICE_EDITOR, CV_TOKEN_ALICE_VIEWER,
CV_UI_SHOTS, HOSTILE (the hostile name of alice's schedule HOSTILE_ID),
BOB_ID and BOB_NAME (a schedule of bob's), FAN_EXEC (a fan-out's
execution), PIPE_EXEC (a pipeline's execution), PIPE_ID (the pipeline).
"""
import json
import os
import shutil
import sys
import tempfile
import traceback
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import (ElementClickInterceptedException,
                                        StaleElementReferenceException,
                                        TimeoutException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

E = os.environ
BASE = E["CRONVISOR_URL"]
SHOTS = E["CV_UI_SHOTS"]
WAIT = 15


def check(name, got, want):
    got = str(got).replace("\t", " ").replace("\n", " ")
    want = str(want).replace("\t", " ").replace("\n", " ")
    print("CHECK\t%s\t%s\t%s" % (name, got, want), flush=True)


def api(method, path, token, body=None):
    req = urllib.request.Request(
        BASE + "/api/v1" + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + token,
                 "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def browser(width, height, profile):
    o = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=%d,%d" % (width, height),
              "--user-data-dir=" + profile):
        o.add_argument(a)
    if width < 500:
        # A phone: headless windows are no narrower than 500 pixels.
        o.add_experimental_option("mobileEmulation", {"deviceMetrics": {
            "width": width, "height": height, "pixelRatio": 1.0}})
    o.binary_location = "/usr/bin/chromium"
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


class Console:
    def __init__(self, d):
        self.d = d
        # A view draws itself again on live events: an element found a
        # moment ago may be gone; the wait looks again.
        self.w = WebDriverWait(d, WAIT, ignored_exceptions=(
            StaleElementReferenceException, ElementClickInterceptedException))
        self.logs = []

    def shot(self, name):
        self.d.save_screenshot(os.path.join(SHOTS, name + ".png"))

    def el(self, css):
        return self.w.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))

    def visible(self, css):
        return self.w.until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))

    def gone(self, css):
        return self.w.until(EC.invisibility_of_element_located((By.CSS_SELECTOR, css)))

    def text_in(self, css, text):
        try:
            self.w.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
            return True
        except TimeoutException:
            return False

    def has(self, css):
        return len(self.d.find_elements(By.CSS_SELECTOR, css)) > 0

    def click(self, css):
        def once(_):
            e = EC.element_to_be_clickable((By.CSS_SELECTOR, css))(self.d)
            if not e:
                return False
            # In the middle of the screen: nothing fixed or open lies over it.
            self.d.execute_script(
                "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", e)
            e.click()
            return True
        # A live event may draw the view again between finding and
        # clicking: the wait finds it again (a stale element is ignored).
        self.w.until(once)

    def go(self, path):
        """Moves inside the page (no reload), as a click on a link does."""
        self.d.execute_script(
            "history.pushState(null, '', arguments[0]);"
            "window.dispatchEvent(new PopStateEvent('popstate'));", "/admin" + path)

    def sign_in(self, token):
        self.d.get(BASE + "/admin/")
        self.el("#token").send_keys(token)
        self.el("#token").send_keys(Keys.ENTER)  # the keyboard submits
        self.el("#me")

    def sign_out(self):
        self.click("#signout")
        self.el("#token")

    def collect_logs(self):
        self.logs += self.d.get_log("browser")


def run_editor(c):
    d = c.d
    # --- sign-in ---------------------------------------------------------
    d.get(BASE + "/admin/")
    c.shot("01-sign-in")
    c.el("#token").send_keys("cvt_not_a_token")
    c.click("#signin")
    check("an unknown token is refused at sign-in",
          c.text_in("#signin-error", "unknown or revoked"), True)
    c.el("#token").clear()
    c.sign_in(E["CV_TOKEN_ALICE_EDITOR"])
    check("signed in: who and role shown", c.el("#me").text, "alice · editor")
    check("the token is kept for the tab only (sessionStorage)",
          d.execute_script("return sessionStorage.getItem('cronvisor.token')"),
          E["CV_TOKEN_ALICE_EDITOR"])
    check("... not in localStorage or a cookie",
          d.execute_script("return JSON.stringify(localStorage) + document.cookie"
                           ).find("cvt_"), -1)
    check("... nor in the address", d.current_url.find("cvt_"), -1)

    # --- overview ----------------------------------------------------------
    c.el("#supervisors-alive")
    check("overview: a supervisor alive", c.el("#supervisors-alive").text, "1")
    check("overview: the chart is drawn", c.has("#runs-chart"), True)
    check("overview: a recent failure listed",
          c.text_in("#failures", "exited with status"), True)
    c.shot("02-overview")

    # --- the list: search, tenant, hostile text ---------------------------
    c.click("a[href='/admin/scheduler/schedules']")
    c.el("#schedules tbody tr[data-id]")
    c.shot("03-schedules")
    src = d.page_source
    check("another tenant's schedule is not listed", E["BOB_NAME"] in src, False)
    cell = d.find_element(By.CSS_SELECTOR, "#schedules tr[data-id='%s'] td a" % E["HOSTILE_ID"])
    check("a hostile name shows as the text it is", cell.text, E["HOSTILE"])
    check("... and makes no element", c.has("#schedules img"), False)
    check("... and runs nothing", d.execute_script("return window.__xss === undefined"), True)
    q = c.el("#f-q")
    q.send_keys("FAN")
    c.click("#search")
    c.w.until(lambda _: "q=FAN" in d.current_url)
    c.el("#schedules tbody tr")
    names = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#schedules tbody td a")]
    check("search by name (any case): only the matches", names, ["fan-out"])
    Select(c.el("#f-status")).select_by_value("dead")
    c.el("#f-q").clear()
    c.click("#search")
    c.w.until(lambda _: "status=dead" in d.current_url)
    c.el("#schedules tbody tr")
    statuses = {e.text for e in d.find_elements(By.CSS_SELECTOR, "#schedules .badge.status")}
    check("filter by status: dead only", statuses, {"dead"})

    # --- pages: 52 schedules named page-NN, 50 a page ----------------------
    c.go("/scheduler/schedules?q=page-&sort=name")
    c.el("#schedules tbody tr[data-id]")
    names = lambda: [e.text for e in d.find_elements(By.CSS_SELECTOR, "#schedules tbody td a")]
    first = names()
    check("pages: the first 50 by name", [len(first), first[0], first[-1]], [50, "page-10", "page-59"])
    c.click("#page-next")
    c.w.until(lambda _: "cursor=" in d.current_url and len(names()) == 2)
    check("... the next page: the last 2", names(), ["page-60", "page-61"])
    c.click("#page-prev")
    c.w.until(lambda _: "cursor=" not in d.current_url and len(names()) == 50)
    check("... back to the first", names()[0], "page-10")

    # --- create, with a bad field first ------------------------------------
    c.go("/scheduler/schedules")
    c.click("#create")
    c.el("#s-name").send_keys("console made")
    Select(c.el("#s-kind")).select_by_value("interval")
    c.el("#s-interval_seconds").send_keys("ten")
    c.el("#s-target").send_keys('{"type": "exec", "argv": ["/bin/echo", "<b>from the console</b>"]}')
    c.el("#s-name").send_keys(Keys.ENTER)  # the keyboard submits the form
    c.visible("#s-interval_seconds.is-invalid")
    check("a bad field: the API's error at that field",
          c.text_in("#e-interval_seconds", "integer"), True)
    check("... and nothing created",
          [s["name"] for s in api("GET", "/schedules?limit=500", E["CV_TOKEN_ALICE_EDITOR"])["schedules"]
           if s["name"] == "console made"], [])
    c.shot("04-field-error")
    c.el("#s-interval_seconds").clear()
    c.el("#s-interval_seconds").send_keys("3600")
    c.el("#save").send_keys(Keys.ENTER)
    c.el("#schedule-name")
    check("created through the form", c.el("#schedule-name").text, "console made")
    sid = d.current_url.rsplit("/", 1)[1]
    made = api("GET", "/schedules/" + sid, E["CV_TOKEN_ALICE_EDITOR"])
    check("... as the form said", [made["interval_seconds"], made["target"]["argv"][1]],
          [3600, "<b>from the console</b>"])

    # --- pause, resume, run now, a run's output -----------------------------
    c.click("#pause")
    check("paused through the button", c.text_in(".badge.status", "paused"), True)
    check("... in the API", api("GET", "/schedules/" + sid, E["CV_TOKEN_ALICE_EDITOR"])["status"], "paused")
    c.click("#resume")
    check("resumed through the button", c.text_in(".badge.status", "active"), True)
    c.click("#run-now")
    c.el("#action-msg a")
    run_id = c.el("#action-msg a").text
    check("run now: a triggered run", run_id.startswith("sched-") and "-t" in run_id, True)
    c.click("#action-msg a")
    c.el("#run-id")
    # The run page follows the live events: it shows the end without a reload.
    ok = c.text_in("#run-output", "<b>from the console</b>")
    check("the run's output, as text", ok, True)
    check("... its exit code", c.text_in(".facts", "Exit code"), True)
    c.shot("05-run")

    # --- edit, with the cron preview ----------------------------------------
    c.go("/scheduler/schedules/%s/edit" % sid)
    Select(c.el("#s-kind")).select_by_value("cron")
    # Sundays of March at 02:30 in Paris: the last one's 02:30 does not exist.
    c.el("#s-cron").send_keys("30 2 * 3 0")
    tz = c.el("#s-timezone")
    tz.clear()
    tz.send_keys("Europe/Paris")
    ok = c.text_in("#preview-times", "T01:30:00Z")
    check("cron preview: next fire times in UTC", ok, True)
    check("... in the zone, with its abbreviation",
          c.text_in("#preview-times", "02:30:00+01:00 CET"), True)
    check("... the DST note of the gap", c.text_in("#preview-times", "skipped by DST"), True)
    check("... five of them", len(d.find_elements(By.CSS_SELECTOR, "#preview-times tbody tr")), 5)
    c.d.execute_script("document.getElementById('preview')"
                       ".scrollIntoView({block: 'center', behavior: 'instant'})")
    c.shot("06-edit-preview")
    c.el("#s-cron").send_keys(" *")
    check("a bad cron: the preview names the field",
          c.text_in("#preview-error", "cron"), True)
    c.el("#s-cron").send_keys(Keys.BACKSPACE, Keys.BACKSPACE)
    c.el("#s-description").send_keys("edited in the console")
    c.el("#save").send_keys(Keys.ENTER)
    c.el("#schedule-name")
    made = api("GET", "/schedules/" + sid, E["CV_TOKEN_ALICE_EDITOR"])
    check("edited through the form", [made["kind"], made["cron"], made["timezone"], made["description"]],
          ["cron", "30 2 * 3 0", "Europe/Paris", "edited in the console"])

    # --- live: a schedule made elsewhere appears without a reload ------------
    c.go("/scheduler/schedules?order=desc")
    c.el("#schedules tbody tr[data-id]")
    c.w.until(lambda _: c.el("#live").text == "live")
    other = api("POST", "/schedules", E["CV_TOKEN_ALICE_EDITOR"],
                {"name": "made elsewhere", "interval_seconds": 86400})
    found = True
    try:
        c.el("#schedules tr[data-id='%s']" % other["id"])
    except TimeoutException:
        found = False
    check("live: a new schedule appears without a reload", found, True)

    # --- bulk pause, then delete -------------------------------------------
    for i in (sid, other["id"]):
        c.click("#schedules input[data-id='%s']" % i)
    check("two selected", c.el("#chosen").text, "2 selected")
    c.click("#bulk-pause")
    c.text_in("#list-msg", "Paused 2")
    st = [api("GET", "/schedules/" + i, E["CV_TOKEN_ALICE_EDITOR"])["status"] for i in (sid, other["id"])]
    check("bulk pause", st, ["paused", "paused"])
    c.el("#schedules tr[data-id='%s']" % sid)
    for i in (sid, other["id"]):
        c.click("#schedules input[data-id='%s']" % i)
    c.click("#bulk-delete")
    c.w.until(EC.alert_is_present()).accept()
    c.w.until(lambda _: not c.has("#schedules tr[data-id='%s']" % sid))
    left = [s["id"] for s in api("GET", "/schedules?limit=500", E["CV_TOKEN_ALICE_EDITOR"])["schedules"]]
    check("bulk delete", [sid in left, other["id"] in left], [False, False])

    # --- another tenant's page, executions, pipelines, agents --------------
    c.go("/scheduler/schedules/" + E["BOB_ID"])
    check("another tenant's schedule: not found", c.text_in("#main .alert", "no such schedule"), True)
    c.go("/executions/" + E["FAN_EXEC"])
    c.el("#job-counts")
    check("a fan-out's execution: jobs by status",
          [c.el("#job-counts [data-count='completed']").text,
           c.el("#job-counts [data-count='failed']").text], ["5", "5"])
    check("... its failed jobs with their errors",
          len(d.find_elements(By.CSS_SELECTOR, "#failed-jobs tbody tr")), 5)
    check("... retry failed offered", c.has("#retry-failed"), True)
    rows = d.find_elements(By.CSS_SELECTOR, "#batches tbody tr")
    check("... its 3 batches, planned against actual", len(rows), 3)
    late = [r.find_elements(By.TAG_NAME, "td")[3].text for r in rows]
    check("... none started before its planned time",
          [x.endswith(" ms") and int(x.split()[0]) >= 0 for x in late], [True] * 3)
    c.shot("07-fanout")
    c.go("/executions/" + E["PIPE_EXEC"])
    c.el("#contexts")
    check("a pipeline execution: contexts × steps",
          len(d.find_elements(By.CSS_SELECTOR, "#contexts tbody tr")), 3)
    check("... its graph", len(d.find_elements(By.CSS_SELECTOR, ".dag .node")), 2)
    c.shot("08-pipeline-execution")
    c.go("/scheduler/pipelines/" + E["PIPE_ID"])
    c.el(".dag")
    check("a pipeline's graph: steps and the edge",
          [len(d.find_elements(By.CSS_SELECTOR, ".dag .node")),
           len(d.find_elements(By.CSS_SELECTOR, ".dag .edge"))], [2, 1])
    c.shot("09-pipeline")
    c.go("/agents")
    c.el("#agents")
    check("the registry: both agents, okay in production",
          c.text_in("#agents", "production: 1.0.0"), True)
    c.shot("10-agents")
    c.go("/agents/okay")
    c.el("#agent-id")
    check("an agent's health history", c.text_in("#health", "healthy"), True)
    Select(c.el("#deploy-version")).select_by_value("1.1.0")
    env = c.el("#deploy-env")
    env.clear()
    env.send_keys("staging")
    c.click("#deploy")
    c.w.until(lambda _: "staging" in c.el("#deployments").text)
    Select(c.el("#promote-from")).select_by_value("staging")
    c.click("#promote")
    c.w.until(lambda _: "promote" in c.el("#deploy-history").text)
    deps = api("GET", "/agents/okay/deployments", E["CV_TOKEN_ALICE_EDITOR"])["deployments"]
    check("deploy, then promote staging to production",
          [deps["staging"]["version"], deps["production"]["version"]], ["1.1.0", "1.1.0"])
    Select(c.el("#rollback-env")).select_by_value("production")
    c.click("#rollback")
    c.w.until(lambda _: "rollback" in c.el("#deploy-history").text)
    deps = api("GET", "/agents/okay/deployments", E["CV_TOKEN_ALICE_EDITOR"])["deployments"]
    check("roll back production", deps["production"]["version"], "1.0.0")
    c.shot("11-agent")

    # --- dark, then sign out -----------------------------------------------
    c.click("#theme")  # auto -> light
    c.click("#theme")  # light -> dark
    check("dark theme", d.execute_script(
        "return getComputedStyle(document.body).backgroundColor"), "rgb(21, 24, 28)")
    c.go("/scheduler/schedules")
    c.el("#schedules")
    c.shot("12-schedules-dark")
    c.click("#theme")
    c.sign_out()
    check("sign-out forgets the token",
          d.execute_script("return sessionStorage.getItem('cronvisor.token')"), None)


def run_viewer(c):
    d = c.d
    c.sign_in(E["CV_TOKEN_ALICE_VIEWER"])
    check("viewer signed in", c.el("#me").text, "alice · viewer")
    c.go("/scheduler/schedules")
    c.el("#schedules tbody tr[data-id]")
    check("a viewer: no create, no selection, no bulk actions",
          [c.has("#create"), c.has("#schedules input[type=checkbox]"), c.has("#bulk-pause")],
          [False, False, False])
    c.go("/scheduler/schedules/" + E["HOSTILE_ID"])
    c.el("#schedule-name")
    check("a viewer: no write buttons on a schedule",
          [c.has(x) for x in ("#pause", "#resume", "#run-now", "#edit", "#delete")],
          [False] * 5)
    check("... the hostile name as text", c.el("#schedule-name").text, E["HOSTILE"])
    c.shot("13-viewer-schedule")
    c.go("/scheduler/schedules/new")
    check("a viewer: the create form refused", c.text_in("#main", "viewer token cannot"), True)
    c.go("/executions/" + E["FAN_EXEC"])
    c.el("#job-counts")
    check("a viewer: no retry failed", c.has("#retry-failed"), False)


def run_phone(c):
    d = c.d
    c.sign_in(E["CV_TOKEN_ALICE_EDITOR"])
    c.go("/scheduler/schedules")
    c.el("#schedules")
    check("a phone: the links fold behind Menu",
          d.find_element(By.ID, "navlinks").is_displayed(), False)
    c.shot("14-phone-schedules")
    c.click("button[aria-controls=navlinks]")
    check("... and open on it", d.find_element(By.ID, "navlinks").is_displayed(), True)
    c.shot("15-phone-menu")
    check("... the page fits the screen's width", d.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"), True)


def main():
    os.makedirs(SHOTS, exist_ok=True)
    for name, fn, size in (("editor", run_editor, (1280, 800)),
                           ("viewer", run_viewer, (1280, 800)),
                           ("phone", run_phone, (390, 844))):
        # A profile of its own: nothing kept from another walk-through.
        profile = tempfile.mkdtemp(prefix="cv-ui-")
        d = browser(*size, profile)
        c = Console(d)
        try:
            fn(c)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            try:
                c.shot("failed-" + name)
            except Exception:
                pass
            check("%s: the walk-through ran to its end" % name, "stopped", "ended")
        finally:
            try:
                c.collect_logs()
            except Exception:
                pass
            d.quit()
            shutil.rmtree(profile, ignore_errors=True)
        csp = [e["message"] for e in c.logs if "Content Security Policy" in e["message"]]
        check("%s: no Content-Security-Policy violation" % name, csp, [])
        errs = [e["message"] for e in c.logs
                if e["level"] == "SEVERE" and "/api/v1/events" not in e["message"]
                and not any(" %d (" % c in e["message"] for c in (400, 401, 404))]
        check("%s: no script error" % name, errs, [])


if __name__ == "__main__":
    main()

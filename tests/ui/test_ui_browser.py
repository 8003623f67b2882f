"""``mnemo ui`` driven in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, through
Selenium): what a user does with it, end to end. One server and one browser serve the whole module.

Each page is also photographed, light and dark, into a temporary directory, or into ``$MNEMO_UI_SCREENSHOTS``
when set (``MNEMO_UI_SCREENSHOTS=docs/ui pytest tests/ui`` refreshes the pictures docs/ui.md shows).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mnemo.config import load_settings
from mnemo.graph.store import MemoryGraph
from mnemo.storage import open_graph

from .seeding import ALICE_TOKEN, BOB_TOKEN, Seeded, hold

WAIT = 20  # seconds a page may take to arrive on a loaded machine before a test fails
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip(
        "the browser tests need Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser tests need selenium (the test extra)")
from selenium.common.exceptions import NoSuchElementException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,860",
                     "--disable-extensions", "--no-first-run", "--disable-background-networking"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("MNEMO_UI_SCREENSHOTS")
    directory = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def shoot(driver, directory: Path, name: str) -> None:
    """The page as it is, in the light theme and the dark one (the system preference, emulated)."""
    for scheme in ("light", "dark"):
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )
        driver.save_screenshot(str(directory / f"{name}-{scheme}.png"))
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def log_in(driver, server, token: str) -> None:
    """A fresh browser session, logged in with a configured token through the login form."""
    driver.delete_all_cookies()
    driver.get(f"{server.url}/login")
    driver.find_element(By.NAME, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "main form button").click()
    wait(driver).until(expected_conditions.title_contains("Overview"))


def wait(driver) -> WebDriverWait:
    """A wait that looks again when the page it looked at was replaced meanwhile (a form's redirect)."""
    return WebDriverWait(driver, WAIT, ignored_exceptions=(WebDriverException,))


def go(driver, server, path: str) -> None:
    driver.get(f"{server.url}{path}")


def text(driver) -> str:
    return driver.find_element(By.TAG_NAME, "main").text


def rows(driver) -> str:
    """The text of the page's table rows (not the search box's echo of the query)."""
    return "\n".join(row.text for row in driver.find_elements(By.CSS_SELECTOR, "main tbody tr"))


def submit(driver, label: str) -> None:
    """Click the button labelled ``label`` and wait for the page it leads to: the old document carries a mark
    the new one lacks (asking about the clicked element instead races the navigation in chromedriver)."""
    driver.execute_script("window.mnemoOldPage = true")
    driver.find_element(By.XPATH, f"//main//button[normalize-space()='{label}']").click()
    arrived(driver)


def arrived(driver) -> None:
    """Wait until the document with the mark :func:`submit` set is replaced and the new one has loaded."""
    wait(driver).until(lambda d: d.execute_script("return !window.mnemoOldPage && document.readyState === 'complete'"))


def graph_of(seeded: Seeded, user: str = "alice") -> MemoryGraph:
    settings = load_settings(seeded.home, user_id=user)
    return open_graph(settings.database_target, scope=settings.scope)


# -- logging in ------------------------------------------------------------------------------------------


def test_the_start_link_logs_in_and_shows_the_overview(browser, server, shots):
    browser.delete_all_cookies()
    browser.get(server.start_url)
    wait(browser).until(expected_conditions.title_contains("Overview"))
    wait(browser).until(
        lambda d: "problem" in d.find_element(By.ID, "doctor").text or "checks" in d.find_element(By.ID, "doctor").text
    )
    wait(browser).until(lambda d: "total" in d.find_element(By.ID, "counts").text)
    assert "token=" not in browser.current_url
    assert "USER.md" in text(browser) and "preference" in browser.find_element(By.ID, "counts").text
    shoot(browser, shots, "overview")


def test_an_unknown_token_is_refused(browser, server):
    browser.delete_all_cookies()
    go(browser, server, "/login")
    browser.find_element(By.NAME, "token").send_keys("a-token-nobody-configured-00000")
    submit(browser, "Log in")
    assert "Unknown token" in text(browser)
    go(browser, server, "/memories")
    assert browser.title.startswith("Log in")


# -- memories --------------------------------------------------------------------------------------------


def test_search_finds_a_memory_through_recall(browser, server, shots):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, "/memories")
    shoot(browser, shots, "memories")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("what does she drink in the morning")
    submit(browser, "Filter")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.memories tbody tr")
    assert "green tea" in rows[0].text
    assert "found by" in text(browser)


def test_a_memory_leads_to_the_turn_it_was_said_in(browser, server, seeded, shots):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, f"/memories/{seeded.tea}")
    shoot(browser, shots, "memory")
    browser.execute_script("window.mnemoOldPage = true")
    browser.find_element(By.CSS_SELECTOR, "a.said").click()
    arrived(browser)
    turn = browser.find_element(By.ID, urlsplit(browser.current_url).fragment)
    assert "I prefer green tea over coffee" in turn.text and "user" in turn.text
    WebDriverWait(browser, 3).until(
        lambda d: d.execute_script("return document.activeElement.id") == turn.get_attribute("id")
    )  # the keyboard continues from it
    shoot(browser, shots, "session")


def test_an_edit_is_a_new_version_and_undo_brings_the_old_text_back(browser, server, seeded):
    with graph_of(seeded) as graph:
        memory = graph.remember("The quarterly review is on Monday.", "event")
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, f"/memories/{memory.id}")
    content = browser.find_element(By.NAME, "content")
    content.clear()
    content.send_keys("The quarterly review moved to Thursday.")
    submit(browser, "Save as new version")
    assert "moved to Thursday" in browser.find_element(By.CSS_SELECTOR, "blockquote.content").text
    submit(browser, "Undo last edit")
    assert browser.find_element(By.CSS_SELECTOR, "blockquote.content").text == "The quarterly review is on Monday."
    with graph_of(seeded) as graph:
        versions = graph.history(browser.current_url.rsplit("/", 1)[1])
    assert [v.content for v in versions] == [
        "The quarterly review is on Monday.",
        "The quarterly review moved to Thursday.",
        "The quarterly review is on Monday.",
    ]


def test_pin_and_unpin(browser, server, seeded):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, f"/memories/{seeded.tea}")
    submit(browser, "Pin")
    with graph_of(seeded) as graph:
        assert graph.get(seeded.tea).pinned
    submit(browser, "Unpin")
    with graph_of(seeded) as graph:
        assert not graph.get(seeded.tea).pinned


def test_forget_hides_a_memory_from_search_and_unforget_brings_it_back(browser, server, seeded):
    with graph_of(seeded) as graph:
        memory = graph.remember("The wifi password hint is the cat's name.", "fact")
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, f"/memories/{memory.id}")
    browser.find_element(By.XPATH, "//main//button[normalize-space()='Forget']").click()
    browser.switch_to.alert.accept()
    wait(browser).until(lambda d: "Unforget" in d.find_element(By.TAG_NAME, "main").text)
    go(browser, server, "/memories?q=wifi+password+hint")
    assert "wifi password" not in rows(browser)
    go(browser, server, f"/memories/{memory.id}")
    submit(browser, "Unforget")
    go(browser, server, "/memories?q=wifi+password+hint")
    assert "wifi password" in rows(browser)


def test_relate_draws_an_edge_to_walk(browser, server, seeded):
    with graph_of(seeded) as graph:
        first = graph.remember("Carol's birthday is on 3 March.", "fact")
        second = graph.remember("Carol likes orchids.", "preference")
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, f"/memories/{first.id}")
    browser.find_element(By.NAME, "target").send_keys(second.id)
    submit(browser, "Relate")
    browser.execute_script("window.mnemoOldPage = true")
    browser.find_element(By.CSS_SELECTOR, f'svg.edges a[href="/memories/{second.id}"]').click()
    arrived(browser)
    assert browser.current_url.endswith(f"/memories/{second.id}")
    assert "orchids" in browser.find_element(By.CSS_SELECTOR, "blockquote.content").text


# -- the other pages -------------------------------------------------------------------------------------


def test_the_recall_debugger_shows_the_block_the_model_gets_and_each_candidate(browser, server, shots):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, "/recall")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("where does my sister live?")
    submit(browser, "Recall")
    prepared = browser.find_element(By.ID, "prepared").text
    assert prepared.startswith("where does my sister live?") and "<memory-context>" in prepared and "Lisbon" in prepared
    first = browser.find_elements(By.CSS_SELECTOR, "table.candidates tbody tr")[0].text
    assert "Lisbon" in first and "in context" in first
    shoot(browser, shots, "recall")


def test_the_recall_debugger_ranks_earlier_sessions_messages_beside_memories(browser, server):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, "/recall?q=PostgreSQL+for+billing")
    candidates = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "table.candidates tbody tr")]
    assert any(row.split()[1:2] == ["memory"] and "PostgreSQL" in row for row in candidates)
    assert "fts rank" in text(browser)  # a memory's ranks by channel
    # The assistant's reply was never made a memory: recall finds the archived message itself.
    assert any("message assistant: PostgreSQL for billing, then." in row for row in candidates)
    assert "earlier session alice-trip" in browser.find_element(By.ID, "prepared").text


def test_a_removed_curated_entry_is_restored_from_its_history(browser, server, seeded, shots):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, "/curated")
    shoot(browser, shots, "curated")
    section = browser.find_element(By.ID, "memory")
    section.find_element(By.XPATH, ".//button[normalize-space()='Remove']").click()
    wait(browser).until(lambda d: "Deploys happen on Tuesdays" not in d.find_element(By.ID, "memory").text)
    go(browser, server, "/curated/history")
    shoot(browser, shots, "curated-history")
    submit(browser, "Restore what this removed")
    go(browser, server, "/curated")
    assert "Deploys happen on Tuesdays" in browser.find_element(By.ID, "memory").text


def test_the_archive_is_searchable(browser, server, shots):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, "/sessions")
    shoot(browser, shots, "sessions")
    browser.find_element(By.NAME, "q").send_keys("PostgreSQL billing")
    submit(browser, "Search")
    assert "alice-trip" in text(browser) and browser.find_elements(By.CSS_SELECTOR, ".snippet mark")


def test_the_prompt_preview_shows_the_frozen_blocks(browser, server, shots):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, "/prompt")
    assert "Alice is a backend engineer in Berlin." in text(browser) and "total" in text(browser)
    shoot(browser, shots, "prompt")


def test_keyboard_slash_focuses_search_and_g_m_opens_memories(browser, server):
    log_in(browser, server, ALICE_TOKEN)
    go(browser, server, "/sessions")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("/")
    assert browser.switch_to.active_element.get_attribute("name") == "q"
    go(browser, server, "/sessions")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("g")
    body.send_keys("m")
    wait(browser).until(expected_conditions.title_contains("Memories"))


# -- review ----------------------------------------------------------------------------------------------


def test_an_approved_write_leaves_the_review_queue_for_curated_memory(browser, server, seeded, shots):
    approved = hold(seeded.home, "The user banks with the Harbour Credit Union.")
    waiting = hold(seeded.home, "The user's newsletter goes to the shared inbox.", target=None)
    log_in(browser, server, ALICE_TOKEN)
    assert "2 writes await your review" in text(browser)
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("g")
    body.send_keys("v")
    wait(browser).until(expected_conditions.title_contains("Review"))
    assert "read_email" in browser.find_element(By.ID, approved).text
    shoot(browser, shots, "review")
    browser.execute_script("window.mnemoOldPage = true")
    browser.find_element(By.ID, approved).find_element(By.XPATH, ".//button[normalize-space()='Approve']").click()
    arrived(browser)
    assert f"Approved {approved}" in text(browser)
    assert not browser.find_elements(By.ID, approved) and browser.find_elements(By.ID, waiting)
    go(browser, server, "/curated")
    assert "Harbour Credit Union" in text(browser)


# -- who sees what ---------------------------------------------------------------------------------------


def test_one_user_never_sees_anothers_data(browser, server, seeded):
    log_in(browser, server, BOB_TOKEN)
    go(browser, server, "/memories?q=green+tea")
    assert "green tea" not in rows(browser)
    go(browser, server, "/memories")
    assert "Nightjar" in rows(browser) and "Lisbon" not in rows(browser)
    go(browser, server, f"/memories/{seeded.tea}")
    assert "no memory with id" in text(browser)
    go(browser, server, f"/sessions/{seeded.session}")
    assert "no session" in text(browser)
    go(browser, server, "/curated")
    assert "Bob prefers espresso." in text(browser) and "Berlin" not in text(browser)
    go(browser, server, "/recall?q=where+does+my+sister+live")
    assert "Lisbon" not in browser.find_element(By.ID, "prepared").text and "Lisbon" not in rows(browser)


class _Hostile(BaseHTTPRequestHandler):
    """Another site: a page whose form posts to the UI as soon as it loads."""

    target = ""

    def do_GET(self) -> None:  # noqa: N802
        page = (f'<form method="post" action="{self.target}"><input name="csrf" value="guess"></form>'
                "<script>document.forms[0].submit()</script>").encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: object) -> None:
        pass


def test_a_form_on_another_site_cannot_change_memory(browser, server, seeded):
    log_in(browser, server, ALICE_TOKEN)
    _Hostile.target = f"{server.url}/memories/{seeded.tea}/forget"
    hostile = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    hostile.daemon_threads = True
    thread = threading.Thread(target=hostile.serve_forever, daemon=True)
    thread.start()
    try:
        browser.get(f"http://localhost:{hostile.server_address[1]}/")
        wait(browser).until(expected_conditions.title_contains("Refused"))
    finally:
        hostile.shutdown()
        hostile.server_close()
    with graph_of(seeded) as graph:
        assert not graph.get(seeded.tea).forgotten
    go(browser, server, "/")
    try:
        browser.find_element(By.CSS_SELECTOR, "header .scope")  # still logged in: the refusal did not log out
    except NoSuchElementException:
        pytest.fail("the refused cross-site post ended the session")

"""``mnemo ui``'s review page at the HTTP level: the writes held for review in the user's scope, approved (the
exact content shown, by its digest) or rejected through the same calls ``mnemo review`` makes, every decision
behind the CSRF and origin checks, and another user's held writes unknown."""

from __future__ import annotations

import html
import re

from mnemo.config import load_settings
from mnemo.graph.review import ReviewQueue, ReviewState
from mnemo.storage import open_graph

from .client import Client
from .seeding import ALICE_TOKEN, BOB_TOKEN, MAIL, Seeded, hold


def _state(seeded: Seeded, item_id: str, user: str = "alice") -> ReviewState:
    settings = load_settings(seeded.home, user_id=user)
    with open_graph(settings.database_target, scope=settings.scope) as graph:
        return ReviewQueue(graph).get(item_id).state


def _pending(seeded: Seeded) -> int:
    settings = load_settings(seeded.home)
    with open_graph(settings.database_target, scope=settings.scope) as graph:
        return ReviewQueue(graph).pending_count()


def _digest(client: Client, item_id: str) -> str:
    _, _, text = client.request("GET", f"/review/{item_id}")
    return re.search(r'name="digest" value="([0-9a-f]{64})"', text)[1]


def _decide(client: Client, item_id: str, action: str, **fields: str) -> tuple[int, dict[str, str], str]:
    return client.request("POST", f"/review/{item_id}/{action}", {"csrf": client.csrf("/review"), **fields})


def _queued(text: str, item_id: str) -> bool:
    """Whether the queue page lists ``item_id`` among the pending writes (the decided ones are a table)."""
    return f'<section class="card held" id="{item_id}">' in text


def test_the_overview_counts_the_writes_awaiting_review_and_links_to_the_queue(server, seeded):
    hold(seeded.home, "Invoices go to the harbour office from now on.")
    _, _, text = Client(server).login(ALICE_TOKEN).request("GET", "/")
    count = _pending(seeded)
    assert count >= 1
    assert f'<a href="/review" id="awaiting">{count} write' in text


def test_the_queue_shows_a_held_write_with_where_it_came_from_and_its_decisions(server, seeded):
    item = hold(seeded.home, "The user's accountant is Dana Whitfield.")
    status, _, text = Client(server).login(ALICE_TOKEN).request("GET", "/review")
    assert status == 200 and _queued(text, item)
    card = text[text.index(f'id="{item}"') :].split("</section>")[0]
    assert html.escape("The user's accountant is Dana Whitfield.") in card
    assert "tainted" in card and "<code>read_email</code>" in card and "USER.md" in card and "It came after" in card
    assert f'action="/review/{item}/approve"' in card and f'action="/review/{item}/reject"' in card
    assert 'name="digest"' in card


def test_a_held_writes_page_shows_the_untrusted_content_it_follows(server, seeded):
    item = hold(seeded.home, "The user's locker code is kept by Priya.")
    status, _, text = Client(server).login(ALICE_TOKEN).request("GET", f"/review/{item}")
    assert status == 200 and html.escape(MAIL) in text and "The untrusted content it follows" in text


def test_approving_applies_the_exact_write_as_the_users_and_it_leaves_the_queue(server, seeded):
    content = "The user's dentist is Dr. Okafor on Elm Street."
    item = hold(seeded.home, content)
    client = Client(server).login(ALICE_TOKEN)
    status, headers, _ = _decide(client, item, "approve", digest=_digest(client, item))
    assert (status, headers["location"]) == (303, "/review")
    _, _, queue = client.request("GET", "/review")
    assert not _queued(queue, item) and f"Approved {item} into USER.md: " in queue
    assert html.escape(content) in client.request("GET", "/curated")[2]
    assert _state(seeded, item) is ReviewState.APPROVED


def test_an_approved_graph_write_becomes_a_memory_the_queue_links_to(server, seeded):
    content = "The user's bike is stored at the Oak Street garage."
    item = hold(seeded.home, content, target=None)
    client = Client(server).login(ALICE_TOKEN)
    _decide(client, item, "approve", digest=_digest(client, item))
    queue = client.request("GET", "/review")[2]
    assert not _queued(queue, item) and f"Approved {item}: saved as memory" in queue
    where = re.search(r'<a href="(/memories/[^"]+)">memory ', queue)[1]  # the decided list links to it
    status, _, page = client.request("GET", where)
    assert status == 200 and html.escape(content) in page


def test_rejecting_removes_the_write_from_the_queue_and_applies_nothing(server, seeded):
    content = "The user's spare key is under the blue flowerpot."
    item = hold(seeded.home, content)
    client = Client(server).login(ALICE_TOKEN)
    status, _, _ = _decide(client, item, "reject")
    assert status == 303
    _, _, queue = client.request("GET", "/review")
    assert not _queued(queue, item) and f"Rejected {item}" in queue
    assert html.escape(content) not in client.request("GET", "/curated")[2]
    assert _state(seeded, item) is ReviewState.REJECTED


def test_an_approval_naming_other_content_is_refused_and_changes_nothing(server, seeded):
    shown = hold(seeded.home, "The user's gym membership renews in March.")
    other = hold(seeded.home, "The user's parking permit number is on the fridge.")
    client = Client(server).login(ALICE_TOKEN)
    status, _, text = _decide(client, shown, "approve", digest=_digest(client, other))
    assert status == 409 and "digest differs" in text
    assert _state(seeded, shown) is ReviewState.PENDING
    assert "gym membership" not in client.request("GET", "/curated")[2]


def test_an_approval_without_a_digest_is_refused(server, seeded):
    item = hold(seeded.home, "The user's cat is called Miso.")
    status, _, text = _decide(Client(server).login(ALICE_TOKEN), item, "approve")
    assert status == 400 and "digest" in text and _state(seeded, item) is ReviewState.PENDING


def test_a_decided_write_cannot_be_decided_again(server, seeded):
    item = hold(seeded.home, "The user's library card expires in June.")
    client = Client(server).login(ALICE_TOKEN)
    digest = _digest(client, item)
    _decide(client, item, "reject")
    status, _, text = _decide(client, item, "approve", digest=digest)
    assert status == 409 and "rejected" in text and _state(seeded, item) is ReviewState.REJECTED


def test_a_decision_without_the_csrf_token_is_refused_and_changes_nothing(server, seeded):
    item = hold(seeded.home, "The user's piano lessons are on Thursdays.")
    client = Client(server).login(ALICE_TOKEN)
    digest = _digest(client, item)
    status, _, _ = client.request("POST", f"/review/{item}/approve", {"csrf": "guessed", "digest": digest})
    assert status == 403 and _state(seeded, item) is ReviewState.PENDING


def test_a_decision_from_another_origin_is_refused_and_changes_nothing(server, seeded):
    item = hold(seeded.home, "The user's plants are watered on Sundays.")
    client = Client(server).login(ALICE_TOKEN)
    status, _, _ = client.request(
        "POST", f"/review/{item}/reject", {"csrf": client.csrf()}, Origin="http://evil.example"
    )
    assert status == 403 and _state(seeded, item) is ReviewState.PENDING


def test_another_users_held_write_is_unknown_and_stays_pending(server, seeded):
    item = hold(seeded.home, "Bob's storage unit is number 42.", user="bob")
    alice = Client(server).login(ALICE_TOKEN)
    assert alice.request("GET", f"/review/{item}")[0] == 404
    assert _decide(alice, item, "reject")[0] == 404
    assert not _queued(alice.request("GET", "/review")[2], item)
    assert _state(seeded, item, user="bob") is ReviewState.PENDING
    assert _queued(Client(server).login(BOB_TOKEN).request("GET", "/review")[2], item)

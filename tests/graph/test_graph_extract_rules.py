"""The deterministic extractor: what people say about themselves and their world is kept and typed; what they
ask of the assistant, wonder about or paste is not."""

from __future__ import annotations

import pytest

from mnemo.graph import MemoryType
from mnemo.graph.extract_rules import extract, third_person
from mnemo.graph.extraction import extract_messages


def said(text: str, name: str = "") -> list[tuple[MemoryType, str]]:
    """(type, content) of what the extractor keeps from one user message."""
    message = {"role": "user", "content": text, **({"name": name} if name else {})}
    return [(c.type, c.content) for c in extract([message])]


# what is kept


def test_what_a_host_session_said_reaches_the_graph_typed_and_the_request_does_not(graph):
    session = [
        {"role": "user", "content": "I'm allergic to peanuts."},
        {"role": "assistant", "content": "Noted!"},
        {"role": "user", "content": "my bike is a green Brompton"},
        {"role": "user", "content": "Remind me how to format a date in Python."},
    ]
    extract_messages(graph, "s1", session)
    assert sorted((m.type, m.content) for m in graph.memories()) == [
        (MemoryType.FACT, "User is allergic to peanuts."),
        (MemoryType.FACT, "User's bike is a green Brompton"),
    ]


def test_a_condition_is_kept_as_a_fact():
    assert said("I'm allergic to peanuts.") == [(MemoryType.FACT, "User is allergic to peanuts.")]


def test_a_diagnosis_is_kept_as_a_fact():
    assert said("I've been diagnosed with type 2 diabetes.") == [
        (MemoryType.FACT, "User has been diagnosed with type 2 diabetes.")
    ]


def test_a_possession_keeps_its_attributes():
    assert said("My bike is a green Brompton.") == [(MemoryType.FACT, "User's bike is a green Brompton.")]


def test_a_relation_keeps_the_persons_name_and_place():
    assert said("My sister Ana lives in Porto.") == [(MemoryType.FACT, "User's sister Ana lives in Porto.")]


def test_a_move_is_kept_as_an_event():
    assert said("We moved to Lisbon in the spring.") == [(MemoryType.EVENT, "We moved to Lisbon in the spring.")]


def test_where_someone_lives_is_their_identity():
    assert said("I'm based in Utrecht, near the central station.") == [
        (MemoryType.IDENTITY, "User is based in Utrecht, near the central station.")
    ]


def test_a_dislike_is_a_preference():
    assert said("I can't stand loud restaurants.") == [(MemoryType.PREFERENCE, "User can't stand loud restaurants.")]


def test_a_negated_habit_keeps_its_negation():
    assert said("I don't drink coffee anymore.") == [(MemoryType.PREFERENCE, "User doesn't drink coffee anymore.")]


def test_a_past_state_keeps_its_tense():
    assert said("I used to live in Madrid.") == [(MemoryType.FACT, "User used to live in Madrid.")]


def test_a_plan_is_a_goal():
    assert said("I'm training for a half marathon in October.") == [
        (MemoryType.GOAL, "User is training for a half marathon in October.")
    ]


def test_a_reminder_for_the_user_is_a_todo():
    assert said("Remind me to renew the domain on June 3rd.") == [
        (MemoryType.TODO, "Remind User to renew the domain on June 3rd.")
    ]


def test_a_choice_is_a_decision():
    assert said("Let's go with SQLAlchemy 2.0 for the data layer.") == [
        (MemoryType.DECISION, "Let's go with SQLAlchemy 2.0 for the data layer.")
    ]


def test_an_age_and_a_job_are_identity():
    assert said("I'm 34 and I work as a UX designer.") == [
        (MemoryType.IDENTITY, "User is 34 and User works as a UX designer.")
    ]


def test_facts_about_the_users_environment_are_kept():
    kept = said("Our staging DB is on port 6543. We deploy with ArgoCD. I use neovim. The repo uses uv for packaging.")
    assert kept == [
        (MemoryType.FACT, "Our staging DB is on port 6543."),
        (MemoryType.FACT, "We deploy with ArgoCD."),
        (MemoryType.FACT, "User uses neovim."),
        (MemoryType.FACT, "The repo uses uv for packaging."),
    ]


def test_a_standing_instruction_is_a_preference():
    assert said("Don't use f-strings in logging calls, our linter flags them.") == [
        (MemoryType.PREFERENCE, "Don't use f-strings in logging calls, our linter flags them.")
    ]


def test_a_statement_the_user_asks_to_have_remembered_loses_the_request():
    assert said("Remember that my wife is allergic to shellfish.") == [
        (MemoryType.FACT, "User's wife is allergic to shellfish.")
    ]


def test_spoken_openers_and_the_listeners_name_are_cut():
    assert said("Yeah Maria, I'm really hoping to get into local politics.", "John") == [
        (MemoryType.GOAL, "John is really hoping to get into local politics.")
    ]


def test_a_dropped_i_of_casual_speech_is_restored():
    assert said("Been busy volunteering at the homeless shelter.", "Maria") == [
        (MemoryType.EVENT, "Maria has been busy volunteering at the homeless shelter.")
    ]


def test_each_sentence_of_a_message_is_judged_on_its_own():
    kept = said("Thanks! Anyway, I'm lactose intolerant. Can you suggest a dessert?")
    assert kept == [(MemoryType.FACT, "User is lactose intolerant.")]


# what is refused


def test_a_request_to_be_reminded_how_is_not_a_todo():
    assert said("Remind me how to format a date in Python.") == []


def test_a_question_without_its_mark_is_refused():
    assert said("can you write a function that parses my ISO dates") == []


def test_a_question_with_its_mark_is_refused():
    assert said("Why does my for loop skip the last element?") == []


@pytest.mark.parametrize(
    "command",
    [
        "Show me the diff for my last commit.",
        "Please write a unit test for my parser.",
        "Add oat milk and eggs to my shopping list.",
        "Book a table for two at my usual place.",
    ],
)
def test_commands_to_the_assistant_are_refused(command):
    assert said(command) == []


def test_asking_the_assistant_for_something_in_the_first_person_is_refused():
    assert said("I need you to check my calendar for Thursday.") == []
    assert said("I'd love a recommendation for a sci-fi novel.") == []


def test_hypotheticals_are_refused():
    assert said("If I had more time I'd learn the piano.") == []
    assert said("What if we ran our batch jobs on spot instances.") == []


def test_what_is_not_settled_is_refused():
    assert said("Maybe we should use Redis for caching, not sure yet.") == []
    assert said("I'm wondering whether to get a standing desk.") == []


def test_pasted_errors_are_refused():
    traceback = 'Traceback (most recent call last):\n  File "my_app.py", line 3\nValueError: I need an int'
    assert said(traceback) == []


def test_fenced_code_is_refused_while_the_prose_around_it_is_kept():
    message = "I use pytest for everything.\n```\n# I love globals\nmy_list = [1, 2]\n```"
    assert said(message) == [(MemoryType.FACT, "User uses pytest for everything.")]


def test_greetings_and_small_talk_are_refused():
    assert said("Hey Mel! Good to see you! Thanks, that fixed it!") == []


def test_talk_aimed_at_the_other_speaker_is_refused():
    assert said("I'm so proud of you! I love your painting!") == []


def test_advice_to_the_other_speaker_is_refused():
    assert said("Don't forget to take breaks when you need to destress!") == []


def test_other_peoples_habits_are_refused():
    assert said("John from accounting uses Excel for everything.") == []


# the third person


def test_a_subject_joined_to_the_speaker_keeps_a_plural_verb():
    assert third_person("My partner and I are getting married.", "Ana") == "Ana's partner and Ana are getting married."


def test_negated_verbs_take_the_third_person():
    assert (
        third_person("I don't eat meat and I haven't for years.", "Ana")
        == "Ana doesn't eat meat and Ana hasn't for years."
    )


def test_a_verb_after_an_adverb_takes_the_third_person():
    assert third_person("I hate rain and I really enjoy snow.", "Ana") == "Ana hates rain and Ana really enjoys snow."


def test_a_reminder_of_something_said_before_is_cut_and_the_fact_kept():
    assert said("As you know, I live in Porto.") == [(MemoryType.IDENTITY, "User lives in Porto.")]


def test_a_sentence_about_the_listener_is_refused():
    assert said("I have been wanting to try your chocolate cake for a while now.") == []


def test_a_contracted_sentence_of_two_words_is_long_enough_and_a_bare_one_is_not():
    assert said("I'm vegan.") == [(MemoryType.PREFERENCE, "User is vegan.")]
    assert said("I did.") == []


def test_typographic_apostrophes_read_as_plain_ones():
    assert said("I\u2019m allergic to peanuts.") == [(MemoryType.FACT, "User is allergic to peanuts.")]


def test_a_new_address_is_where_the_user_lives():
    assert said("I now live at 12 Baker Street.") == [(MemoryType.IDENTITY, "User now lives at 12 Baker Street.")]


def test_something_the_user_has_got_is_a_fact():
    assert said("I've got a Raspberry Pi running Home Assistant.") == [
        (MemoryType.FACT, "User has got a Raspberry Pi running Home Assistant.")
    ]

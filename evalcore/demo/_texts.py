"""Reusable phrasing for the demo: reply openers, rubrics, judge templates, judge reasons, comments.

Everything here is written for evalcore. Strings with ``{subject}``, ``{page}``, ``{terse}``,
``{invented}``, ``{wrong}``, ``{other}`` or ``{issue}`` slots are filled with the facts of one item by
:mod:`evalcore.demo._build` and :mod:`evalcore.demo._judges`.
"""

from __future__ import annotations

from typing import Any

# --- reply composition ----------------------------------------------------------------------------

OPENERS = (
    "",
    "",
    "Thanks for getting in touch!",
    "Good question.",
    "Happy to help.",
    "Hi there!",
    "Thanks for asking.",
    "Of course.",
)

CLOSERS = (
    "",
    "",
    "Let me know if there's anything else I can do.",
    "Hope that helps!",
    "Enjoy your next trip!",
    "Happy trails!",
    "Is there anything else I can help with?",
)

HEDGES = (
    "I'm not completely sure, but as far as I know: {terse} You may want to double-check with our support team.",
    "I think this is right, though I'd confirm it before relying on it: {terse}",
    "From what I can find: {terse} I can't promise that applies to your order, so please check with a team member.",
    "This might depend on your situation. Possibly: {terse} Our team can confirm.",
)

UNHELPFUL = (
    "This is covered on our {page} page. Please read it there.",
    "We get asked about {subject} a lot. All the information is on the website.",
    "I can't help with {subject} here. Please contact support.",
    "Please check the {page} page before contacting us.",
    "That depends on a number of factors. See {page}.",
    "As stated on our {page} page, the policy applies to everyone. There's nothing more I can add.",
)

OFF_TOPIC_INTROS = (
    "",
    "Sure!",
    "Great question!",
    "Here's what you need to know.",
)

# --- criteria -------------------------------------------------------------------------------------

RUBRICS = {
    "helpfulness": (
        "How well does the reply help this customer with the question they actually asked?\n"
        "5: correct, complete and easy to act on.\n"
        "4: correct, but missing a detail the customer would want.\n"
        "3: partly answers, or hedges so much that the customer is left unsure.\n"
        "2: wrong on a key point, or brushes the customer off.\n"
        "1: does not answer the question at all.\n"
        "Judge against the knowledge-base passage, not your own idea of the policy. A friendly tone "
        "does not make up for a wrong answer."
    ),
    "groundedness": (
        "Is every factual claim in the reply supported by the knowledge-base passage shown?\n"
        "pass: each policy, number, time or product detail can be found in the passage (paraphrase is "
        "fine).\n"
        "fail: at least one claim is missing from the passage or contradicts it.\n"
        "Greetings, apologies and offers to help are not claims. Judge only what the reply says, not "
        "whether it is helpful."
    ),
    "preference": (
        "Two replies answer the same customer question. Which one serves the customer better?\n"
        "A: reply A is better. B: reply B is better. TIE: they are about equally good or equally poor.\n"
        "Check correctness against the passage first, then completeness, then tone.\n"
        "Do not prefer a reply just because it is longer or comes first."
    ),
}

CRITERION_DESCRIPTIONS = {
    "helpfulness": "Does the reply help the customer with the question they asked? (1 to 5)",
    "groundedness": "Is every claim in the reply supported by the retrieved passage? (pass/fail)",
    "preference": "Which of two replies serves the customer better? (A, B or tie)",
}

# --- judge templates ------------------------------------------------------------------------------

_HELPFULNESS_V1_SYSTEM = (
    "You are grading replies written by the customer-support assistant of an outdoor-gear shop.\n"
    "Rate how helpful the reply is to the customer, from 1 (not helpful at all) to 5 (fully helpful).\n"
    'Reply with JSON only: {"reason": "<one sentence>", "score": <integer 1-5>}'
)
_HELPFULNESS_V1_USER = "Customer question:\n{{ prompt }}\n\nAssistant reply:\n{{ response }}\n\nHow helpful is this reply?"
_HELPFULNESS_V2_SYSTEM = (
    "You review answers from the support assistant of an outdoor-gear shop. Judge helpfulness: does the "
    "reply answer the customer's actual question correctly and completely, with the details they need to "
    "act?\n\n"
    "5 = correct, complete and easy to act on.\n"
    "4 = correct, but missing a useful detail.\n"
    "3 = partly answers, or hedges so much that the customer is unsure.\n"
    "2 = wrong on a key point, or dismissive.\n"
    "1 = does not answer the question, or is wrong throughout.\n\n"
    "Use the passage and the expected answer to check facts. A complete delivery answer states the cost, "
    "the delivery time and any conditions. Politeness alone never earns a high score; most replies "
    "deserve less than 5.\n"
    'Write your reasoning in one sentence, then answer with JSON only: {"reason": "...", "score": 1-5}'
)
_HELPFULNESS_V2_USER = (
    "Customer question:\n{{ prompt }}\n\n"
    "Knowledge-base passage the assistant was given:\n{{ context }}\n\n"
    "What a correct answer says:\n{{ reference }}\n\n"
    "Reply to grade:\n{{ response }}"
)
_GROUNDEDNESS_V1_SYSTEM = (
    "You check whether a support assistant's reply sticks to the facts in a knowledge-base passage.\n"
    'Label the reply "pass" if its claims are supported by the passage and "fail" otherwise.\n'
    'Reply with JSON only: {"reason": "<one sentence>", "label": "pass" or "fail"}'
)
_GROUNDEDNESS_V1_USER = "Passage:\n{{ context }}\n\nReply:\n{{ response }}"
_GROUNDEDNESS_V2_SYSTEM = (
    "You audit a support assistant's reply against the knowledge-base passage it was given.\n"
    "1. List every factual claim in the reply: policies, prices, times, limits, product details.\n"
    "   Greetings, apologies and offers to help are not claims.\n"
    "2. For each claim, find the sentence of the passage that states it. A paraphrase counts only if it "
    "means exactly the same thing.\n"
    '3. If any claim is missing from the passage or contradicts it, the label is "fail"; otherwise "pass".\n'
    'Answer with JSON only: {"reason": "<the unsupported claim, or why all are supported>", '
    '"label": "pass" or "fail"}'
)
_GROUNDEDNESS_V2_USER = (
    "Customer question (for orientation only):\n{{ prompt }}\n\n"
    "Passage:\n{{ context }}\n\n"
    "Reply to audit:\n{{ response }}"
)
_PREFERENCE_V1_SYSTEM = (
    "Two assistant replies answer the same customer question for an outdoor-gear shop.\n"
    "Decide which reply serves the customer better.\n"
    'Answer with JSON only: {"reason": "<one sentence>", "choice": "A", "B" or "TIE"}'
)
_PREFERENCE_V1_USER = (
    "Question:\n{{ prompt }}\n\nReply A:\n{{ response_a }}\n\nReply B:\n{{ response_b }}"
)
_PREFERENCE_V2_SYSTEM = (
    "You compare two replies from a support assistant. Decide which reply gives the customer more of "
    "what they need.\n"
    "Check, in this order: (1) correctness against the passage, (2) completeness, (3) tone.\n"
    "The order in which the replies appear means nothing. Say TIE only when neither reply is better on "
    "any of the three points.\n"
    'Answer with JSON only: {"reason": "<one sentence>", "choice": "A", "B" or "TIE"}'
)
_PREFERENCE_V2_USER = (
    "Question:\n{{ prompt }}\n\n"
    "Passage:\n{{ context }}\n\n"
    "Reply A:\n{{ response_a }}\n\n"
    "Reply B:\n{{ response_b }}"
)

#: (template name, version number) -> the system and user messages, the author and the version note.
TEMPLATE_TEXTS: dict[tuple[str, int], dict[str, Any]] = {
    ("helpfulness-judge", 1): {
        "system": _HELPFULNESS_V1_SYSTEM,
        "user": _HELPFULNESS_V1_USER,
        "author": "sam",
        "note": "First version: question and reply only.",
    },
    ("helpfulness-judge", 2): {
        "system": _HELPFULNESS_V2_SYSTEM,
        "user": _HELPFULNESS_V2_USER,
        "author": "noor",
        "note": (
            "Score anchors, the passage and the expected answer; tells the judge that most replies "
            "deserve less than 5."
        ),
    },
    ("groundedness-judge", 1): {
        "system": _GROUNDEDNESS_V1_SYSTEM,
        "user": _GROUNDEDNESS_V1_USER,
        "author": "sam",
        "note": "First version: passage and reply.",
    },
    ("groundedness-judge", 2): {
        "system": _GROUNDEDNESS_V2_SYSTEM,
        "user": _GROUNDEDNESS_V2_USER,
        "author": "noor",
        "note": "Claim-by-claim audit; a paraphrase must mean exactly the same thing.",
    },
    ("preference-judge", 1): {
        "system": _PREFERENCE_V1_SYSTEM,
        "user": _PREFERENCE_V1_USER,
        "author": "sam",
        "note": "First version: question and the two replies.",
    },
    ("preference-judge", 2): {
        "system": _PREFERENCE_V2_SYSTEM,
        "user": _PREFERENCE_V2_USER,
        "author": "noor",
        "note": "Adds the passage and an explicit order of checks; run in both orders.",
    },
}

# --- judge reasons --------------------------------------------------------------------------------

HELPFULNESS_REASONS: dict[int, tuple[str, ...]] = {
    5: (
        "Answers the question about {subject} clearly and completely.",
        "Friendly and accurate; gives the customer everything they need on {subject}.",
        "Directly addresses {subject} and gives a clear next step.",
        "A complete, well-organised answer about {subject}.",
        "The reply is polite and addresses {subject}.",
    ),
    4: (
        "Correct on {subject}, though it leaves out a useful detail.",
        "A good answer about {subject} that could say a little more.",
        "Accurate and polite, but a bit thin on {subject}.",
    ),
    3: (
        "Only partly answers the question about {subject}; the customer may still be unsure.",
        "The gist about {subject} is there, but it hedges or lacks detail.",
        "A partial answer on {subject}.",
    ),
    2: (
        "Gets a key point about {subject} wrong or brushes the customer off.",
        "Mostly unhelpful on {subject}.",
        "After reading this the customer would not know what to do about {subject}.",
    ),
    1: (
        "Does not answer the question about {subject}.",
        "Talks about something else entirely instead of {subject}.",
        "Wrong throughout; it would mislead the customer about {subject}.",
    ),
}

#: Reasons helpfulness v2 gives when it marks down an incomplete delivery answer.
SHIPPING_PENALTY_REASONS = (
    "Too short for a delivery question: it does not give the cost, the delivery time and the conditions.",
    "Gives only part of the delivery details for {subject}; a complete answer states cost, time and conditions.",
    "Leaves out delivery details the customer needs about {subject}.",
)

GROUNDED_PASS_REASONS = (
    "Every claim about {subject} matches the passage.",
    "The reply only restates what the passage says about {subject}.",
    "No unsupported claims; the details on {subject} come from the passage.",
    "All the figures and conditions in the reply appear in the passage.",
)

GROUNDED_FAIL_REASONS = {
    "invented": (
        'The passage never says this: "{invented}"',
        "Adds a claim the passage does not support: {invented}",
    ),
    "wrong": (
        'Contradicts the passage: "{wrong}"',
        "The reply's key claim disagrees with the passage on {subject}.",
    ),
    "other": (
        "The reply talks about {other}, which this passage does not cover.",
        "None of the reply's claims can be found in the passage about {subject}.",
    ),
    "strict": (
        "The reply words the policy on {subject} differently from the passage, so it is not exactly supported.",
        "Cannot find an exact statement in the passage for every detail about {subject}.",
        "One claim about {subject} is only implied by the passage, not stated.",
    ),
    "vague": (
        "The reply makes claims about the website and the policy that the passage does not state.",
        "It refers to information that is not in the passage.",
    ),
}

PREFERENCE_REASONS = {
    "win": (
        "Reply {winner} answers the question about {subject} more fully; reply {loser} {issue}.",
        "Reply {winner} is accurate and more useful, while reply {loser} {issue}.",
        "{winner} is the better answer on {subject}: {loser} {issue}.",
    ),
    "win_generic": (
        "Reply {winner} is more detailed and friendlier.",
        "Reply {winner} reads better and covers more about {subject}.",
        "I prefer reply {winner}; it is clearer.",
    ),
    "tie": (
        "Both replies give the same information about {subject}.",
        "Neither reply is clearly better on {subject}.",
    ),
}

#: What a reply of each quality gets wrong, for pairwise reasons ("reply B ...").
ISSUES = {
    "excellent": "is good too but a little less complete",
    "solid": "leaves out a detail",
    "terse": "is very brief",
    "hedged": "is unsure of itself",
    "hallucinated": "adds a claim the passage does not support",
    "partly_wrong": "gets a key fact wrong",
    "unhelpful": "does not really answer",
    "off_topic": "answers a different question",
}

# --- judge replies that do not parse, and failures ------------------------------------------------

UNPARSED_HELPFULNESS = (
    "Score: 4.5/5. The reply covers {subject} but could be warmer.",
    '{{"reason": "Mostly right about {subject}, one detail is unclear.", "score": 3.5}}',
    '{{"reason": "The reply addresses {subject} and',
    "I'm sorry, but I can't rate this reply without more information about the customer's order.",
    "```\nreason: covers {subject}\nscore: four\n```",
    '{{"reason": "Clear answer on {subject}.", "score": "4/5"}}',
)
UNPARSED_GROUNDEDNESS = (
    '{{"reason": "Most claims about {subject} are in the passage.", "label": "partially"}}',
    '{{"reason": "The reply restates the passage on {subject} but',
    "PASS - the reply matches the passage.\nFAIL - none.",
    "I cannot verify this reply because the passage may be incomplete.",
    '{{"reason": "Mixed.", "label": "pass/fail"}}',
)
UNPARSED_PREFERENCE = (
    '{{"reason": "Both have strengths on {subject}.", "choice": "A or B"}}',
    "Response A is better because it is more complete.",
    '{{"reason": "Reply A is more specific about {subject}, while reply B',
    '{{"reason": "Hard to say.", "choice": "C"}}',
    "I would need to know the customer's order details to compare these replies.",
)

FAILURES = (
    "endpoint error: 502 Bad Gateway after 3 attempts",
    "request timed out after 30 s (3 attempts)",
    "endpoint error: 429 Too Many Requests, retry budget exhausted",
    "endpoint error: 500 Internal Server Error after 3 attempts",
)

# --- annotator comments ---------------------------------------------------------------------------

HELPFULNESS_COMMENTS = {
    "excellent": (
        "Great answer.",
        "Clear, complete and kind.",
        "Exactly what I'd want as a customer.",
    ),
    "solid": ("Good, slightly brief.", "Correct; could add the extra detail from the passage."),
    "terse": ("Correct but very short.", "Right answer, no warmth.", "Bare minimum, but accurate."),
    "hedged": (
        "Too unsure of itself; the passage is clear.",
        "Why hedge? The answer is in the passage.",
    ),
    "hallucinated": (
        "Where does the last sentence come from? Not in the passage.",
        "Sounds helpful but invents a detail.",
    ),
    "partly_wrong": (
        "Contradicts the policy.",
        "Wrong on the key fact.",
        "This would mislead the customer.",
    ),
    "unhelpful": ("Brushes the customer off.", "Curt, and doesn't answer.", "Unfriendly tone."),
    "off_topic": (
        "Answers a different question.",
        "Off topic; looks like the wrong passage was used.",
    ),
}

GROUNDEDNESS_COMMENTS = {
    "pass": ("All in the passage.", "Checked every figure against the passage."),
    "fail": (
        "Claim not in the passage.",
        "Contradicts the passage.",
        "Invented detail at the end.",
    ),
}

PREFERENCE_COMMENTS = {
    "A": ("A is clearer.", "A gets the facts right.", "B is vague."),
    "B": ("B is clearer.", "B gets the facts right.", "A is off."),
    "TIE": ("Both say the same thing.", "Hard call, both fine.", "Both poor."),
}

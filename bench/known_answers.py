"""Known-answer questions for the recall scenario: facts planted among the bench corpus.

Each fact is written the way a user tells an agent something about their life, and
nothing in ``bench.corpus`` says the same thing, so each question has exactly one right
record. Questions are asked the way someone would later ask about it: other words
around one or two that the fact shares (sometimes inflected: "smoke" for "smoking",
"leaking" for "leaks"), never the fact's words one for one. Some facts sit among
filler that shares their common words on purpose (allergies, couriers, reading
glasses, knee braces, savings), and two are the issue's known hard cases, asked in its
words: "kiwi allergy" (hundreds of allergy records) and "is the dog friendly with
couriers" (many chatter records about a dog and a courier).

Every question needs at least one word (or its stem) in common with its answer: the
scenario measures lexical recall, and a question sharing no word could only be
answered by embeddings (issue 16 part 3 measures those separately).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownAnswer:
    question: str
    answer: str  # the planted record's exact text
    hard: str = ""  # why this one is hard, when it is


HARD_KIWI = "kiwi allergy"
HARD_DOG = "is the dog friendly with couriers"

SET: tuple[KnownAnswer, ...] = (
    KnownAnswer(
        HARD_KIWI,
        "I'm allergic to kiwi fruit; my lips swell up straight away.",
        "issue 16: hundreds of allergy records share the common word",
    ),
    KnownAnswer(
        HARD_DOG,
        "Pepper, our dog, is really friendly and the couriers all know her by name.",
        "issue 16: chatter about a dog and the courier ties with the answer",
    ),
    KnownAnswer(
        "where do I keep the spare key?",
        "The spare key is hidden under the blue flowerpot by the shed.",
    ),
    KnownAnswer("when is Ingrid's birthday", "My wife Ingrid's birthday is on the 14th of March."),
    KnownAnswer(
        "do I work nights at the hospital?",
        "I work night shifts at the hospital, so don't call me before 2pm.",
    ),
    KnownAnswer(
        "how does Miso take her pills",
        "My cat Miso needs her thyroid tablets crushed into wet food.",
    ),
    KnownAnswer(
        "is fish okay in my vegetarian diet", "I'm vegetarian but I still eat fish now and then."
    ),
    KnownAnswer(
        "who services the boiler", "The boiler was serviced by Hartley Heating in October."
    ),
    KnownAnswer(
        "what instrument does Theo play", "My son Theo plays the cello in the school orchestra."
    ),
    KnownAnswer(
        "why can't I use the stairs",
        "I can't climb stairs since my hip replacement, please use the ground-floor entrance.",
    ),
    KnownAnswer(
        "where did we write down the wifi password",
        "Our wifi password is written on the fridge whiteboard.",
    ),
    KnownAnswer("what kind of milk do I like", "I prefer oat milk in my coffee, never dairy."),
    KnownAnswer(
        "which building society do I bank with",
        "My bank is Northshire Building Society; never ask for the full card number.",
    ),
    KnownAnswer(
        "where does grandma live now",
        "Grandma Rita lives in a care home in Harrogate and we visit on Sundays.",
    ),
    KnownAnswer("what car do I drive", "My car is a green 2014 Skoda Octavia estate."),
    KnownAnswer(
        "what language am I learning",
        "I'm learning Portuguese before moving to Lisbon in the spring.",
    ),
    KnownAnswer(
        "when does the tap need a new washer",
        "The plumber said the kitchen tap washer needs replacing every two years.",
    ),
    KnownAnswer(
        "am I scared of needles",
        "I have a fear of needles, so I'd rather do blood tests at home with a finger-prick kit.",
    ),
    KnownAnswer(
        "where is the anniversary meal booked",
        "Our anniversary dinner is at La Piazza at 7:30 on the 2nd of June.",
    ),
    KnownAnswer(
        "who waters the plants while we're travelling",
        "My neighbour Gwen waters the tomatoes when we're away.",
    ),
    KnownAnswer(
        "am I colour blind",
        "I'm colour-blind (red-green), so please don't send colour-coded charts.",
    ),
    KnownAnswer("when does my passport run out", "My passport expires in August 2027."),
    KnownAnswer("which evening is choir", "I sing in a community choir every Thursday evening."),
    KnownAnswer("do I go by Sam or Samantha", "Please call me Sam rather than Samantha."),
    KnownAnswer(
        "where does the tortoise spend the winter",
        "Gerald the tortoise hibernates in a box in the garage from November.",
    ),
    KnownAnswer(
        "which marathon am I running", "I'm training for the Berlin marathon in September."
    ),
    KnownAnswer(
        "can my daughter eat goat cheese",
        "My daughter is lactose intolerant but goat's cheese is fine for her.",
        "lactose is one of the filler's allergens",
    ),
    KnownAnswer(
        "which ear has hearing loss",
        "I'm hard of hearing in my left ear, so texts work better than phone calls.",
    ),
    KnownAnswer("leaking shed", "The garden shed roof leaks whenever it rains heavily."),
    KnownAnswer(
        "who is visiting for Christmas",
        "My mother-in-law is coming to stay for Christmas, so the spare bedroom must be ready.",
    ),
    KnownAnswer(
        "do I still smoke", "I gave up smoking two years ago and chew nicotine gum sometimes."
    ),
    KnownAnswer(
        "where do I sell honey",
        "I keep bees at the allotment and sell the honey at the farmers' market.",
    ),
    KnownAnswer("which laptop do I use", "My laptop is a ThinkPad X1 that the company lent me."),
    KnownAnswer("do I play tennis", "I'm a left-handed tennis player with a bad elbow."),
    KnownAnswer(
        "when is the rent due",
        "Our landlord is Mr Okoro and the rent is due on the 1st of each month.",
    ),
    KnownAnswer("where do I volunteer", "I volunteer at the food bank on Saturday mornings."),
    KnownAnswer("what colour is the nursery", "The baby's nursery is painted pale yellow."),
    KnownAnswer(
        "which energy supplier are we with", "I switched energy supplier to Octopus in January."
    ),
    KnownAnswer(
        "do I get sick on ferries",
        "I get seasick, so no ferry crossings when you book holidays for me.",
    ),
    KnownAnswer(
        "when does Arlo start school", "My grandson Arlo starts primary school in September."
    ),
    KnownAnswer(
        "my hobby collecting pens", "I collect vintage fountain pens, especially Parker ones."
    ),
    KnownAnswer("what are we saving up for", "We're saving for a loft conversion next year."),
    KnownAnswer(
        "which football team do I support",
        "My favourite football team is Aston Villa.",
        "the filler's chatter mentions a football match",
    ),
    KnownAnswer(
        "when was the piano last tuned",
        "The piano tuner comes every six months; the last visit was in May.",
    ),
    KnownAnswer(
        "do I need low sugar food",
        "I'm diabetic and need low-sugar options at events.",
    ),
    KnownAnswer("what does Kwame do for work", "My husband Kwame is a night nurse at St Mary's."),
    KnownAnswer(
        "why is the washing machine so noisy",
        "The washing machine makes a banging noise on the spin cycle.",
    ),
    KnownAnswer("when is my Kyoto trip", "I'm going to Kyoto for the cherry blossom in April."),
    KnownAnswer(
        "what book is the reading group on",
        "My reading group is halfway through Middlemarch.",
        "the filler orders reading glasses",
    ),
    KnownAnswer(
        "the wasps' nest problem", "We have a wasp nest under the eaves that needs removing."
    ),
    KnownAnswer(
        "how old are the twins turning", "Our twins, Lola and Max, turn eight on the 9th of July."
    ),
    KnownAnswer("window or aisle seat?", "I always book an aisle seat because of my long legs."),
    KnownAnswer(
        "which GP surgery am I registered with", "My GP is Dr Achebe at the Riverside surgery."
    ),
    KnownAnswer(
        "my fixed rate savings account",
        "I moved the savings into a fixed-rate ISA until 2026.",
        "the loft conversion fact is about saving too",
    ),
    KnownAnswer(
        "who cleaned the gutters", "The gutters were cleared in November by a man called Dev."
    ),
    KnownAnswer(
        "do I need letters in large print",
        "I need large-print letters because of macular degeneration.",
    ),
    KnownAnswer(
        "what time zone is Callum in", "My brother Callum lives in Auckland, twelve hours ahead."
    ),
    KnownAnswer("do we foster animals", "We foster kittens for the local rescue shelter."),
    KnownAnswer(
        "hair dye reaction",
        "I'm allergic to the dye in hair colour, so no salon vouchers please.",
        "another allergy among hundreds",
    ),
    KnownAnswer("trouble sleeping after coffee", "I drink decaf after midday or I can't sleep."),
    KnownAnswer("which allotment plot is mine", "My allotment plot is number 27 at Beech Road."),
    KnownAnswer(
        "who should you contact in an emergency",
        "My emergency contact is my sister Orla on 07700 900461.",
    ),
    KnownAnswer(
        "wheelchair access for deliveries",
        "I use a wheelchair outside the house, so deliveries must come to the side ramp.",
        "deliveries are the filler's commonest subject",
    ),
    KnownAnswer(
        "anything to know about Felix",
        "Our son Felix is autistic and finds loud phone calls stressful.",
    ),
    KnownAnswer(
        "what happened with the broken kettle",
        "I returned the faulty kettle in store and got a voucher instead of cash.",
    ),
    KnownAnswer(
        "when is my knee operation",
        "My knee surgery is scheduled for the 3rd of February.",
        "the filler orders knee braces",
    ),
    KnownAnswer("has the hamster escaped again", "Peanut the hamster escaped twice last month."),
    KnownAnswer("what do we eat on weekdays", "We're vegan on weekdays and flexible at weekends."),
)

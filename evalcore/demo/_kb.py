"""The demo's knowledge base: questions, passages, references and answer parts, written for evalcore.

Northwind Outfitters is a fictional outdoor-gear shop. Each :class:`Faq` is one customer question with
the knowledge-base passage its support assistant retrieved, a short correct answer, and the raw parts
from which :mod:`evalcore.demo._build` composes replies of different quality:

- ``good``: a correct, complete answer body, supported by the passage;
- ``tip``: one more supported detail that turns a good answer into an excellent one;
- ``terse``: a correct answer in a few words;
- ``wrong``: an answer that contradicts the passage on a key point;
- ``invented``: one plausible-sounding sentence that the passage does not support.

Every fact in ``good``, ``tip`` and ``terse`` is in ``context``; nothing in ``invented`` is.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FAQS", "TOPICS", "TOPIC_PAGES", "Faq"]


@dataclass(frozen=True)
class Faq:
    """One question of the demo knowledge base and the parts of its answers."""

    key: str
    topic: str
    question: str
    context: str
    reference: str
    subject: str
    good: str
    tip: str
    terse: str
    wrong: str
    invented: str


TOPICS = ("returns", "shipping", "warranty", "product care", "sizing", "gear advice")

#: The help-centre page an unhelpful reply sends the customer to, per topic.
TOPIC_PAGES = {
    "returns": "Returns & Refunds",
    "shipping": "Delivery",
    "warranty": "Warranty & Repairs",
    "product care": "Care Guides",
    "sizing": "Size Charts",
    "gear advice": "Gear Guides",
}

FAQS: tuple[Faq, ...] = (
    # --- returns ----------------------------------------------------------------------------------
    Faq(
        key="ret-window",
        topic="returns",
        question="I bought a rain jacket three weeks ago and never wore it. Can I still return it?",
        context=(
            "Returns policy / Unused items: Unused items with their original tags attached can be "
            "returned within 60 days of delivery for a full refund to the original payment method. "
            "Refunds are issued within 5 business days of the return reaching our warehouse."
        ),
        reference="Yes. Unused items with tags can be returned within 60 days of delivery for a full refund.",
        subject="returning an unused jacket",
        good=(
            "Yes, you can. Unused items with their original tags still attached can be returned within "
            "60 days of delivery, so three weeks is well inside the window. You'll get a full refund to "
            "the payment method you used."
        ),
        tip="Once the jacket reaches our warehouse, the refund is issued within 5 business days.",
        terse="Yes, unused items with tags can be returned within 60 days.",
        wrong="Yes, but only for store credit: after 14 days we no longer refund returns to your card.",
        invented="We'll also send you a 10% discount code as a thank-you for returning it in good condition.",
    ),
    Faq(
        key="ret-worn-boots",
        topic="returns",
        question="I've worn my new hiking boots on two short walks and they give me blisters. Can I return them?",
        context=(
            "Returns policy / Worn footwear: Footwear that has been worn outdoors can be returned within "
            "30 days of delivery if it does not fit comfortably. Worn footwear is refunded as store "
            "credit, not to the original payment method. Please clean the boots before sending them back."
        ),
        reference="Yes, within 30 days of delivery, refunded as store credit. Clean them first.",
        subject="returning worn boots",
        good=(
            "I'm sorry they're giving you blisters. Boots that have been worn outdoors can still come "
            "back within 30 days of delivery if they don't fit comfortably. For worn footwear the refund "
            "is issued as store credit rather than to your card."
        ),
        tip="Please give them a quick clean before you send them back.",
        terse="Yes, within 30 days, for store credit.",
        wrong="Unfortunately, once boots have been worn outside they can't be returned at all.",
        invented="If you return them in a store, a fitter will also stretch your next pair for free.",
    ),
    Faq(
        key="ret-label-cost",
        topic="returns",
        question="Do I have to pay for return shipping?",
        context=(
            "Returns policy / Return shipping: Trail Club members get a free prepaid return label. For "
            "everyone else, a prepaid label costs $6.95, which is deducted from the refund. Returns "
            "dropped off at any Northwind store are always free."
        ),
        reference="Free for Trail Club members or in a store; otherwise $6.95 is deducted from the refund.",
        subject="return shipping costs",
        good=(
            "It depends. If you're a Trail Club member, the prepaid return label is free. Otherwise the "
            "label costs $6.95, which we take off your refund."
        ),
        tip="You can also drop the return off at any Northwind store, which is always free.",
        terse="$6.95 comes off the refund unless you're a Trail Club member.",
        wrong="Return shipping is free for everyone, so just print the label and send it back.",
        invented="Orders over $150 also qualify for a free return label.",
    ),
    Faq(
        key="ret-fuel",
        topic="returns",
        question="Can I return a gas canister I didn't use?",
        context=(
            "Returns policy / Exclusions: Items marked 'Final sale', fuel canisters and opened food "
            "cannot be returned or exchanged. This is for safety and hygiene reasons."
        ),
        reference="No. Fuel canisters cannot be returned, even unused.",
        subject="returning a fuel canister",
        good=(
            "I'm afraid not. Fuel canisters are one of the items we can't take back, even when they're "
            "unused, for safety reasons."
        ),
        tip="The same applies to items marked 'Final sale' and to opened food.",
        terse="No, fuel canisters can't be returned.",
        wrong="Yes, unopened canisters can be returned within 60 days like any other item.",
        invented="You can, however, bring it to a store and we'll recycle it for a $2 voucher.",
    ),
    Faq(
        key="ret-refund-time",
        topic="returns",
        question="I sent my return last Monday. When will I see the money?",
        context=(
            "Returns policy / Refund timing: We issue the refund within 5 business days of the return "
            "arriving at our warehouse, and we email you when it is issued. Your bank may take a further "
            "3 to 5 business days to show it on your statement."
        ),
        reference="Within 5 business days of the warehouse receiving it, plus 3 to 5 business days for the bank.",
        subject="refund timing",
        good=(
            "We issue the refund within 5 business days of your parcel arriving at our warehouse. After "
            "that, your bank may take another 3 to 5 business days to show it."
        ),
        tip="You'll get an email the moment the refund is issued, so you'll know it's on its way.",
        terse="Within 5 business days of it reaching us, plus a few days for your bank.",
        wrong="Refunds are issued the same day we receive the parcel, so you should see it tomorrow.",
        invented="If it's been more than a week, we automatically add $5 of credit for the delay.",
    ),
    Faq(
        key="ret-exchange",
        topic="returns",
        question="Can I exchange my fleece for a bigger size instead of returning it?",
        context=(
            "Returns policy / Exchanges: Size exchanges are free. Start an exchange from your order page "
            "and choose the new size; we ship the replacement as soon as the carrier scans your return. "
            "Exchanges follow the same 60-day window as returns."
        ),
        reference="Yes, size exchanges are free; start one from the order page within 60 days.",
        subject="exchanging for another size",
        good=(
            "Yes! Size exchanges are free. Open your order page, start an exchange and pick the bigger "
            "size, any time within 60 days."
        ),
        tip=(
            "We ship the new fleece as soon as the carrier scans your return, so you won't have to wait "
            "for it to reach us."
        ),
        terse="Yes, exchanges for a different size are free.",
        wrong="Yes, but exchanges cost $6.95 and we ship the new size only once the old one reaches us.",
        invented="If the bigger size is out of stock, we'll hold one for you for 90 days.",
    ),
    Faq(
        key="ret-gift",
        topic="returns",
        question=(
            "Someone gave me a sleeping bag as a present but I already have one. Can I return it "
            "without a receipt?"
        ),
        context=(
            "Returns policy / Gifts: Gifts can be returned with the gift receipt or the order number. "
            "The refund is given to the recipient as store credit, and the person who bought the gift is "
            "not notified. Store credit never expires and can be used online or in any store."
        ),
        reference="Yes, with the gift receipt or the order number; you receive store credit.",
        subject="returning a gift",
        good=(
            "Yes, as long as you have the gift receipt or the order number. The refund goes to you as "
            "store credit, and the person who gave it to you won't be told."
        ),
        tip="Store credit never expires and works both online and in our stores.",
        terse="Yes, with a gift receipt or the order number, for store credit.",
        wrong="Gifts can only be returned by the person who bought them, and the money goes back to their card.",
        invented="We'll also include a free stuff sack with your store credit.",
    ),
    # --- shipping ---------------------------------------------------------------------------------
    Faq(
        key="ship-rates",
        topic="shipping",
        question="How much is shipping on a $60 order?",
        context=(
            "Delivery / Rates: Standard shipping is free on orders over $75. Orders of $75 or less pay "
            "a flat $5.95. Standard delivery takes 3 to 6 business days."
        ),
        reference="$5.95 for standard delivery (free only over $75); it takes 3 to 6 business days.",
        subject="shipping on a $60 order",
        good=(
            "Standard shipping on a $60 order is a flat $5.95, since free shipping starts above $75. It "
            "usually arrives in 3 to 6 business days."
        ),
        tip="If you add a little over $15 to your basket, standard shipping becomes free.",
        terse="$5.95, since it's under $75.",
        wrong="Shipping is free on all orders over $50, so you won't pay anything.",
        invented="Trail Club members always get free shipping, whatever the order size.",
    ),
    Faq(
        key="ship-express",
        topic="shipping",
        question="I need a stove by Friday. Do you have faster shipping?",
        context=(
            "Delivery / Express: Express delivery takes 1 to 2 business days and costs $14.95. Orders "
            "placed before 1 pm on a business day leave the warehouse the same day. Express is not "
            "available for fuel canisters."
        ),
        reference="Yes: express takes 1 to 2 business days for $14.95; order before 1 pm to ship the same day.",
        subject="express delivery",
        good=(
            "Yes, express delivery takes 1 to 2 business days and costs $14.95. If you order before 1 pm "
            "on a business day, it leaves our warehouse the same day."
        ),
        tip="Just note that express isn't available for fuel canisters, so leave those out of this order.",
        terse="Express is 1 to 2 business days for $14.95.",
        wrong="Yes, express is $14.95 and guarantees delivery the next morning if you order by midnight.",
        invented="Express orders also come with a delivery-day text message so you can reschedule.",
    ),
    Faq(
        key="ship-fuel",
        topic="shipping",
        question="Can you ship fuel canisters to my PO box?",
        context=(
            "Delivery / Fuel and hazardous items: Fuel canisters ship by ground only, with standard "
            "delivery. They cannot be sent to PO boxes or by express, and they cannot be shipped "
            "outside the country."
        ),
        reference="No. Canisters ship by ground to a street address only, never to PO boxes.",
        subject="shipping fuel to a PO box",
        good=(
            "Sorry, we can't. Fuel canisters only travel by ground with standard delivery, and they "
            "can't be sent to PO boxes, so they need a street address."
        ),
        tip="They also can't go by express or be shipped outside the country.",
        terse="No, canisters can't go to PO boxes.",
        wrong="Yes, canisters can go to a PO box as long as you choose ground shipping.",
        invented="You can pick them up instead at any of our partner petrol stations.",
    ),
    Faq(
        key="ship-uk",
        topic="shipping",
        question="Do you deliver to the UK, and will I have to pay customs?",
        context=(
            "Delivery / International: We ship to Canada and the United Kingdom. Import duties and "
            "taxes are calculated and paid at checkout, so there is nothing more to pay on delivery. "
            "International delivery takes 7 to 12 business days."
        ),
        reference="Yes. Duties are paid at checkout, so nothing is due on delivery; it takes 7 to 12 business days.",
        subject="delivery to the UK",
        good=(
            "Yes, we ship to the United Kingdom. Import duties and taxes are worked out and paid at "
            "checkout, so there's nothing extra to pay when the parcel arrives."
        ),
        tip="Delivery to the UK takes 7 to 12 business days.",
        terse="Yes, and duties are paid at checkout.",
        wrong="Yes, we ship to the UK, but the courier will collect customs fees from you on delivery.",
        invented="UK orders over £100 ship for free.",
    ),
    Faq(
        key="ship-tracking",
        topic="shipping",
        question="I ordered yesterday but haven't got a tracking number. Is something wrong?",
        context=(
            "Delivery / Tracking: Orders usually leave the warehouse within 1 business day. A tracking "
            "email is sent within 24 hours of the parcel leaving. Tracking also appears on your order "
            "page once the parcel is dispatched."
        ),
        reference="Probably not: orders leave within 1 business day and tracking is emailed within 24 hours of dispatch.",
        subject="a missing tracking number",
        good=(
            "Nothing is likely to be wrong. Orders usually leave the warehouse within 1 business day, and "
            "the tracking email follows within 24 hours of dispatch, so it may simply not have gone out yet."
        ),
        tip="Once the parcel is dispatched, you'll also see the tracking on your order page.",
        terse="Tracking is emailed within 24 hours of dispatch.",
        wrong=(
            "Tracking numbers are sent the moment you order, so it sounds like your order didn't go "
            "through. Please place it again."
        ),
        invented="You can also get tracking updates by texting your order number to our support line.",
    ),
    Faq(
        key="ship-address",
        topic="shipping",
        question="I typed the wrong address on my order 20 minutes ago. Can I change it?",
        context=(
            "Delivery / Changing an order: You can change the delivery address yourself on the order "
            "page within 1 hour of placing the order. After that the order is being packed and the "
            "address can no longer be changed; contact support and we will try to redirect the parcel "
            "with the carrier."
        ),
        reference="Yes, change it yourself on the order page; that works for 1 hour after ordering.",
        subject="changing the delivery address",
        good=(
            "Yes, you're still in time. You can change the address yourself on your order page for up "
            "to 1 hour after ordering."
        ),
        tip="If the hour has passed, contact support and we'll try to redirect the parcel with the carrier.",
        terse="Yes, on the order page, within an hour of ordering.",
        wrong="Addresses can't be changed once an order is placed; you'll have to wait for it to come back to us.",
        invented="Changing the address may add a $3 re-routing fee.",
    ),
    Faq(
        key="ship-lost",
        topic="shipping",
        question="My tracking says delivered but there's no parcel. What should I do?",
        context=(
            "Delivery / Lost parcels: Report a missing parcel within 14 days of the expected delivery "
            "date. We open a trace with the carrier, which takes up to 5 business days. If the parcel is "
            "not found, we reship the order or refund it, whichever you prefer."
        ),
        reference="Report it within 14 days; after a carrier trace of up to 5 business days we reship or refund.",
        subject="a parcel marked delivered but missing",
        good=(
            "I'm sorry about that. Please report it to us within 14 days of the expected delivery date, "
            "and we'll open a trace with the carrier, which takes up to 5 business days."
        ),
        tip="If the parcel isn't found, we'll reship your order or refund it, whichever you prefer.",
        terse="Report it within 14 days and we'll trace it.",
        wrong=(
            "Once the carrier marks a parcel as delivered we can't do anything; you'll need to file a "
            "claim with the carrier yourself."
        ),
        invented="We'll also refund the shipping cost straight away for the inconvenience.",
    ),
    # --- warranty ---------------------------------------------------------------------------------
    Faq(
        key="war-period",
        topic="warranty",
        question="How long is the warranty on a Northwind backpack?",
        context=(
            "Warranty / Coverage: All Northwind-brand products are covered for 2 years from purchase "
            "against defects in materials and workmanship. Zippers on Northwind packs and jackets are "
            "repaired free of charge for the life of the product."
        ),
        reference="2 years from purchase against defects; zippers are repaired free for life.",
        subject="the backpack warranty",
        good=(
            "Northwind backpacks are covered for 2 years from purchase against defects in materials and "
            "workmanship."
        ),
        tip="On top of that, we repair pack zippers free of charge for the life of the pack.",
        terse="Two years from purchase.",
        wrong="Northwind packs come with a lifetime warranty that covers any kind of damage.",
        invented="You can extend it to 5 years by registering the pack online.",
    ),
    Faq(
        key="war-wear",
        topic="warranty",
        question="The waterproof coating on my 4-year-old jacket is peeling. Is that covered?",
        context=(
            "Warranty / Exclusions: The warranty does not cover normal wear and tear, damage from misuse "
            "or accidents, damage by animals, or products older than 2 years. Our repair service can "
            "still fix many items for a fee; ask support for a quote."
        ),
        reference="No, it is outside the 2-year warranty, but a paid repair may be possible (ask for a quote).",
        subject="peeling coating on an old jacket",
        good=(
            "Unfortunately that isn't covered: at four years old, the jacket is outside the 2-year "
            "warranty. Our repair service may still be able to fix it for a fee, though."
        ),
        tip="Just ask support for a repair quote.",
        terse="No, it's past the 2-year warranty.",
        wrong="Yes, coating failures are always covered, however old the jacket is.",
        invented="We'll send you a free bottle of re-proofing spray in the meantime.",
    ),
    Faq(
        key="war-claim",
        topic="warranty",
        question="My tent pole snapped on the first night. How do I make a warranty claim?",
        context=(
            "Warranty / Making a claim: Fill in the warranty form with your order number and a photo of "
            "the fault. We reply within 7 business days. Depending on the fault, we repair the item, "
            "replace it or give store credit."
        ),
        reference="Send the warranty form with the order number and a photo; we reply within 7 business days.",
        subject="claiming for a snapped pole",
        good=(
            "Sorry to hear that! Fill in our warranty form with your order number and a photo of the "
            "broken pole, and we'll reply within 7 business days."
        ),
        tip="Depending on the fault, we'll repair the pole, replace it or give you store credit.",
        terse="Send the warranty form with a photo and your order number.",
        wrong="Please post the whole tent back to us first; we can't look at a claim without the product.",
        invented="We ship a replacement pole the same day you submit the form.",
    ),
    Faq(
        key="war-other-brand",
        topic="warranty",
        question="Is the headlamp I bought from you covered by your warranty? It's not a Northwind one.",
        context=(
            "Warranty / Other brands: Products from other brands carry their maker's warranty, not the "
            "Northwind warranty. We help you contact the maker and can forward your claim with proof of "
            "purchase. Your Northwind order confirmation counts as proof of purchase."
        ),
        reference="No, it has the maker's warranty; Northwind can help forward the claim.",
        subject="the warranty on another brand's headlamp",
        good=(
            "Other brands' products are covered by their maker's warranty rather than ours. We're happy "
            "to help you reach the maker, and we can forward the claim with your proof of purchase."
        ),
        tip="Your Northwind order confirmation counts as proof of purchase.",
        terse="No, it's covered by the maker's warranty.",
        wrong="Yes, every product we sell gets our 2-year Northwind warranty.",
        invented="If the maker turns the claim down, we'll replace the headlamp ourselves.",
    ),
    Faq(
        key="war-zipper",
        topic="warranty",
        question="The zipper on my 6-year-old Northwind daypack broke. Can you fix it?",
        context=(
            "Warranty / Zipper repairs: Zippers on Northwind packs and jackets are repaired free of "
            "charge for the life of the product, even after the 2-year warranty ends. Send the item with "
            "the repair form; repairs take about 3 weeks."
        ),
        reference="Yes, for free (zipper repairs are free for life); send it with the repair form, about 3 weeks.",
        subject="fixing an old pack zipper",
        good=(
            "Yes, we repair zippers on Northwind packs free of charge for the life of the product, even "
            "after the 2-year warranty has ended. Send the pack in with the repair form."
        ),
        tip="Repairs take about 3 weeks.",
        terse="Yes, zipper repairs are free for life.",
        wrong="Zipper repairs are only free within the 2-year warranty; after that they cost $25.",
        invented="We'll lend you a pack while yours is being repaired.",
    ),
    Faq(
        key="war-receipt",
        topic="warranty",
        question="I lost my receipt. Can I still use the warranty?",
        context=(
            "Warranty / Proof of purchase: A receipt, an order number or a Trail Club account record all "
            "count as proof of purchase. Purchases made with a Trail Club account are recorded "
            "automatically."
        ),
        reference="Yes: an order number or a Trail Club account record also counts as proof of purchase.",
        subject="using the warranty without a receipt",
        good=(
            "Yes, most likely. A receipt isn't the only proof of purchase: your order number counts too."
        ),
        tip="And if you bought it with a Trail Club account, the purchase is already on record.",
        terse="Yes, an order number also counts as proof.",
        wrong="Without the original paper receipt we can't accept a warranty claim.",
        invented="We can also look the purchase up from the last four digits of your card.",
    ),
    Faq(
        key="war-outcome",
        topic="warranty",
        question="If my stove is faulty under warranty, do I get a new one or my money back?",
        context=(
            "Warranty / Outcomes: When a claim is accepted we repair the item, replace it with the same "
            "or an equivalent model, or give store credit. We choose the remedy based on the fault. "
            "Cash refunds are not part of the warranty."
        ),
        reference="Repair, replacement or store credit, chosen by Northwind; no cash refund.",
        subject="what a warranty claim gives you",
        good=(
            "If the claim is accepted, we'll repair the stove, replace it with the same or an equivalent "
            "model, or give you store credit. Which one depends on the fault."
        ),
        tip="A cash refund isn't one of the warranty options, though.",
        terse="Repair, replacement or store credit.",
        wrong="You can choose: either a brand-new stove or a full cash refund.",
        invented="Replacements are always upgraded to the newest model.",
    ),
    # --- product care -----------------------------------------------------------------------------
    Faq(
        key="care-down",
        topic="product care",
        question="How do I wash my down sleeping bag?",
        context=(
            "Care guide / Down sleeping bags: Wash in a front-loading machine on a gentle cycle with a "
            "down-specific wash. Do not use a top loader with a central agitator. Tumble dry on low heat "
            "with two or three clean tennis balls; drying takes 2 to 3 hours. Make sure the bag is "
            "completely dry before storing it."
        ),
        reference="Front loader, gentle cycle, down wash; tumble dry low with tennis balls for 2 to 3 hours.",
        subject="washing a down bag",
        good=(
            "Use a front-loading machine on a gentle cycle with a down-specific wash. Then tumble dry on "
            "low heat with two or three clean tennis balls; it takes 2 to 3 hours."
        ),
        tip="Make sure it's completely dry before you store it, and avoid top loaders with a central agitator.",
        terse="Front loader, gentle cycle, down wash, then tumble dry on low.",
        wrong="Hand wash it in the bath with ordinary detergent, then hang it on a line to dry.",
        invented="Washing it more than twice a year will void the warranty.",
    ),
    Faq(
        key="care-jacket",
        topic="product care",
        question="My rain jacket doesn't bead water any more. What can I do?",
        context=(
            "Care guide / Waterproof jackets: When water stops beading, wash the jacket with a technical "
            "wash, then tumble dry on low for 20 minutes to reactivate the water-repellent finish. If it "
            "still wets out, apply a spray-on water-repellent treatment."
        ),
        reference="Wash with a technical wash, tumble dry low for 20 minutes; if needed, spray on a new treatment.",
        subject="restoring a jacket's water repellency",
        good=(
            "That usually means the water-repellent finish needs refreshing. Wash the jacket with a "
            "technical wash and tumble dry it on low for about 20 minutes to reactivate the finish."
        ),
        tip="If it still soaks through after that, apply a spray-on water-repellent treatment.",
        terse="Wash it with a technical wash and tumble dry on low.",
        wrong="That means the waterproof layer has worn out, and the jacket will need replacing.",
        invented="Most jackets only need this once every five years.",
    ),
    Faq(
        key="care-boots",
        topic="product care",
        question="How should I look after leather hiking boots?",
        context=(
            "Care guide / Leather boots: Brush off dirt after each hike and let the boots dry at room "
            "temperature, away from radiators and fires. Treat the leather with a boot wax every few "
            "months, or when it starts to look dry."
        ),
        reference="Brush them clean, dry them at room temperature away from heat, and wax them every few months.",
        subject="caring for leather boots",
        good=(
            "Brush off the dirt after each hike and let them dry at room temperature, away from "
            "radiators or fires. Every few months, or whenever the leather looks dry, treat it with a "
            "boot wax."
        ),
        tip="However tempting it is, don't speed up drying next to a fire; room temperature is best.",
        terse="Brush them, dry them slowly and wax them now and then.",
        wrong="Put them through the washing machine after each trip and dry them on the radiator.",
        invented="Our stores will wax them for you for free once a year.",
    ),
    Faq(
        key="care-tent",
        topic="product care",
        question="What's the best way to store my tent over the winter?",
        context=(
            "Care guide / Tents: Always make sure the tent is completely dry before storing it, to "
            "prevent mould. Store it loosely in a cool, dry place, for example in a large cotton bag, "
            "rather than tightly packed in its stuff sack."
        ),
        reference="Dry it completely, then store it loosely in a cool, dry place, not packed in its stuff sack.",
        subject="storing a tent",
        good=(
            "First make sure it's completely dry, otherwise mould can set in. Then store it loosely "
            "somewhere cool and dry, such as in a large cotton bag."
        ),
        tip="Avoid leaving it tightly packed in its stuff sack for the winter.",
        terse="Dry it fully and store it loosely somewhere cool and dry.",
        wrong="Keep it rolled tightly in its stuff sack; the tighter it's packed, the better it keeps.",
        invented="A light spray of vinegar before storage also stops mould.",
    ),
    Faq(
        key="care-stove",
        topic="product care",
        question="My stove flame is weak and yellow. How do I clean it?",
        context=(
            "Care guide / Canister stoves: A weak or yellow flame often means the jet is partly blocked. "
            "With the stove cold and the canister removed, clear the jet with the cleaning pin that came "
            "with the stove. Check the O-ring for cracks before reconnecting the canister."
        ),
        reference="With the stove cold and the canister off, clear the jet with the supplied pin; check the O-ring.",
        subject="cleaning a stove jet",
        good=(
            "A weak, yellow flame usually means the jet is partly blocked. Let the stove cool, take the "
            "canister off, and clear the jet with the cleaning pin that came with it."
        ),
        tip="Before you reconnect the canister, check the O-ring for cracks.",
        terse="Clear the jet with the cleaning pin while the stove is cold.",
        wrong="A yellow flame means the canister is nearly empty; just swap in a new one.",
        invented="A yellow flame can also mean the canister is past its expiry date.",
    ),
    Faq(
        key="care-merino",
        topic="product care",
        question="Can I put my merino base layer in the dryer?",
        context=(
            "Care guide / Merino wool: Machine wash cold on a gentle wool cycle. Do not use bleach or "
            "fabric softener. Lay flat to dry; do not tumble dry, as heat can shrink the fibres."
        ),
        reference="No. Lay it flat to dry; wash cold on a gentle wool cycle, without bleach or softener.",
        subject="drying merino",
        good=(
            "Best not to: heat can shrink merino. Wash it cold on a gentle wool cycle and lay it flat to "
            "dry instead."
        ),
        tip="Skip bleach and fabric softener too.",
        terse="No, lay it flat to dry.",
        wrong="Yes, a normal hot tumble dry is fine for merino.",
        invented="Merino also doesn't need washing for its first ten wears.",
    ),
    Faq(
        key="care-filter",
        topic="product care",
        question="How do I look after my water filter between trips?",
        context=(
            "Care guide / Water filters: Backflush the filter after every trip using the syringe "
            "provided, and let it dry before storing it. Never let a used filter freeze: ice can crack "
            "the fibres without any visible sign, and the filter will no longer be safe to use."
        ),
        reference="Backflush it after every trip, let it dry, and never let it freeze.",
        subject="water filter care",
        good=(
            "Backflush it after every trip with the syringe that came with it, then let it dry before "
            "you put it away."
        ),
        tip=(
            "Above all, never let a used filter freeze: ice can crack the fibres without any visible "
            "sign, and the filter would no longer be safe."
        ),
        terse="Backflush it after each trip and let it dry.",
        wrong="Just rinse the outside; backflushing is only needed once a year.",
        invented="Filters should be replaced every 6 months, however little you use them.",
    ),
    # --- sizing -----------------------------------------------------------------------------------
    Faq(
        key="size-between",
        topic="sizing",
        question="I'm between sizes. Should I order my hiking boots bigger or smaller?",
        context=(
            "Size guide / Boots: If you are between sizes, choose the larger size to leave room for "
            "thick socks and for feet swelling on long days. Measure your feet in the evening, when they "
            "are at their largest."
        ),
        reference="Choose the larger size, and measure your feet in the evening.",
        subject="choosing between two boot sizes",
        good=(
            "Go for the larger size. That leaves room for thick socks and for your feet swelling on "
            "long days."
        ),
        tip="If you can, measure your feet in the evening, when they're at their largest.",
        terse="Size up.",
        wrong="Go for the smaller size; leather boots stretch by a full size.",
        invented="Our boots run half a size large, so most people size down.",
    ),
    Faq(
        key="size-fits",
        topic="sizing",
        question="What's the difference between Trail fit and Alpine fit jackets?",
        context=(
            "Size guide / Jacket fits: Trail fit is our regular cut, with room for a fleece underneath. "
            "Alpine fit is slimmer and closer to the body, for climbing. To wear a thick jacket under an "
            "Alpine fit shell, choose one size up."
        ),
        reference="Trail fit is regular with room for a fleece; Alpine fit is slim (size up to layer thickly).",
        subject="Trail fit versus Alpine fit",
        good=(
            "Trail fit is our regular cut, with room for a fleece underneath. Alpine fit is slimmer and "
            "sits closer to the body, which suits climbing."
        ),
        tip="If you plan to wear a thick jacket under an Alpine fit shell, go one size up.",
        terse="Trail fit is regular; Alpine fit is slim.",
        wrong="They're the same cut; Alpine fit just has a longer back.",
        invented="Alpine fit jackets also use a lighter, less durable fabric.",
    ),
    Faq(
        key="size-bag",
        topic="sizing",
        question="I'm 188 cm tall. Do I need the long sleeping bag?",
        context=(
            "Size guide / Sleeping bags: Regular bags fit people up to 183 cm. Long bags fit people up "
            "to 198 cm. If you are close to the limit, choose the longer bag so your feet don't compress "
            "the insulation."
        ),
        reference="Yes, the long bag (fits up to 198 cm); the regular only fits up to 183 cm.",
        subject="sleeping bag length",
        good=(
            "Yes. Regular bags fit people up to 183 cm, so at 188 cm you'll want the long version, "
            "which fits up to 198 cm."
        ),
        tip="A bag that's too short lets your feet squash the insulation at the bottom.",
        terse="Yes, get the long one.",
        wrong="No, the regular bag fits people up to 190 cm, so you'll be fine.",
        invented="The long bag is also 10% warmer.",
    ),
    Faq(
        key="size-pack",
        topic="sizing",
        question="How do I pick the right backpack size?",
        context=(
            "Size guide / Backpacks: Packs are sized by torso length, not by height. Measure from the "
            "bony bump at the base of your neck to the top of your hip bones. S fits 38 to 45 cm, M fits "
            "44 to 50 cm and L fits 49 to 56 cm."
        ),
        reference="By torso length (neck bump to hip bones): S 38-45 cm, M 44-50 cm, L 49-56 cm.",
        subject="backpack sizing",
        good=(
            "Backpacks are sized by torso length rather than height. Measure from the bony bump at the "
            "base of your neck down to the top of your hip bones, then pick S for 38 to 45 cm, M for 44 "
            "to 50 cm or L for 49 to 56 cm."
        ),
        tip="Your height doesn't decide it, so two people of the same height can need different sizes.",
        terse="Measure your torso length and check the size chart.",
        wrong="Pick by height: under 170 cm take S, otherwise M or L.",
        invented="All three sizes have exactly the same capacity.",
    ),
    Faq(
        key="size-convert",
        topic="sizing",
        question="I wear a men's 8 in trail shoes. What women's size would that be?",
        context=(
            "Size guide / Converting sizes: For our footwear, a women's US size is the men's US size "
            "plus 1.5. For example, a men's 8 is a women's 9.5."
        ),
        reference="A women's 9.5.",
        subject="converting men's to women's sizes",
        good=(
            "That would be a women's 9.5. For our footwear, the women's US size is the men's size plus 1.5."
        ),
        tip="The same rule works for all our shoes and boots.",
        terse="Women's 9.5.",
        wrong="That's a women's 10; just add 2 to the men's size.",
        invented="Women's models are also slightly narrower at the heel.",
    ),
    Faq(
        key="size-gloves",
        topic="sizing",
        question="How do I measure my hand for gloves?",
        context=(
            "Size guide / Gloves: Measure around your dominant hand across the knuckles, without the "
            "thumb. Under 19 cm is S, 19 to 21 cm is M, 21 to 23 cm is L and over 23 cm is XL."
        ),
        reference="Around the knuckles of the dominant hand, thumb excluded: S under 19, M 19-21, L 21-23, XL over 23 cm.",
        subject="measuring for gloves",
        good=(
            "Wrap a tape measure around your dominant hand across the knuckles, leaving the thumb out. "
            "Under 19 cm is S, 19 to 21 cm is M, 21 to 23 cm is L, and over 23 cm is XL."
        ),
        tip="Remember to measure your dominant hand, not the other one.",
        terse="Measure around your knuckles and check the chart.",
        wrong="Measure the length of your middle finger; 8 cm or more is a large.",
        invented="If you're between sizes, our gloves stretch by about 1 cm with use.",
    ),
    Faq(
        key="size-kids",
        topic="sizing",
        question="My son grows fast. Will a kids' jacket last more than one season?",
        context=(
            "Size guide / Kids' jackets: Our kids' jackets have a grow cuff: unpicking one seam inside "
            "the sleeve adds about one size of sleeve length. Choose the child's current size; there is "
            "no need to size up."
        ),
        reference="Yes: the grow cuff adds about one size of sleeve length, so buy his current size.",
        subject="kids' grow cuffs",
        good=(
            "It should. Our kids' jackets have a grow cuff: unpicking one seam inside the sleeve adds "
            "about one size of sleeve length."
        ),
        tip="So you can buy his current size; there's no need to size up.",
        terse="Yes, the grow cuff adds a size of sleeve length.",
        wrong="Kids' jackets don't adjust, so we recommend buying two sizes up.",
        invented="We also offer a trade-in discount when he outgrows it.",
    ),
    # --- gear advice ------------------------------------------------------------------------------
    Faq(
        key="gear-seasons",
        topic="gear advice",
        question="Can I use a 3-season tent for winter camping in the mountains?",
        context=(
            "Gear guide / Tent seasons: 3-season tents are designed for spring, summer and autumn. They "
            "are not built for heavy snow loads or strong winter winds. For winter mountain camping, "
            "choose a 4-season tent."
        ),
        reference="It isn't recommended; choose a 4-season tent for winter in the mountains.",
        subject="winter camping in a 3-season tent",
        good=(
            "I wouldn't recommend it. 3-season tents are built for spring, summer and autumn, not for "
            "heavy snow or strong winter winds."
        ),
        tip="For winter in the mountains, a 4-season tent is the right choice.",
        terse="No, get a 4-season tent for that.",
        wrong="Yes, any 3-season tent is fine in snow as long as you guy it out well.",
        invented="Our 3-season tents are rated down to -20 °C.",
    ),
    Faq(
        key="gear-larch",
        topic="gear advice",
        question="How heavy is the Larch 2 tent, and does it really fit two people?",
        context=(
            "Product sheet / Larch 2: Two-person, 3-season backpacking tent. Packed weight 1.9 kg. "
            "Floor 215 x 130 cm, two doors and two vestibules. Packed size 45 x 15 cm."
        ),
        reference="1.9 kg packed, and yes, it is a two-person tent with a 215 x 130 cm floor.",
        subject="the Larch 2's weight and size",
        good="The Larch 2 weighs 1.9 kg packed and is a two-person tent, with a 215 x 130 cm floor.",
        tip="It has two doors and two vestibules, so neither of you has to climb over the other.",
        terse="1.9 kg, and yes, it sleeps two.",
        wrong="It weighs 1.2 kg and fits three people comfortably.",
        invented="It's also fully freestanding and pitches in under two minutes.",
    ),
    Faq(
        key="gear-cold-stove",
        topic="gear advice",
        question="Will my gas stove work when it's below freezing?",
        context=(
            "Gear guide / Stoves in the cold: Canister stoves lose power in the cold. Isobutane-blend "
            "canisters work poorly below about -5 °C. Keep the canister warm, for example in your "
            "sleeping bag overnight, and shield the stove from the wind."
        ),
        reference="Yes, but with less power: isobutane blends struggle below about -5 °C, so keep the canister warm.",
        subject="gas stoves in freezing weather",
        good=(
            "It will, but with less power. Isobutane-blend canisters work poorly below about -5 °C, so "
            "keep the canister warm, for example in your sleeping bag overnight."
        ),
        tip="Shielding the stove from the wind helps too.",
        terse="Yes, but it gets weak below about -5 °C.",
        wrong="Gas stoves stop working completely at 0 °C, so you'll need a different kind of stove.",
        invented="Our canisters contain a winter additive that works down to -20 °C.",
    ),
    Faq(
        key="gear-pad",
        topic="gear advice",
        question="What R-value sleeping pad do I need for winter?",
        context=(
            "Gear guide / Sleeping pads: The R-value measures insulation from the ground; higher is "
            "warmer. For summer, R 2 is usually enough. For camping on frozen ground or snow, choose R 4 "
            "or more. Two pads can be stacked and their R-values added."
        ),
        reference="R 4 or more for frozen ground or snow; stacked pads add their R-values.",
        subject="pad R-values for winter",
        good=(
            "For frozen ground or snow, choose a pad with an R-value of 4 or more. The higher the "
            "R-value, the better it insulates you from the ground."
        ),
        tip="You can also stack two pads; their R-values add up.",
        terse="R 4 or higher.",
        wrong="R 2 is plenty for winter; the R-value hardly matters on snow.",
        invented="Inflatable pads lose half their R-value below freezing.",
    ),
    Faq(
        key="gear-break-in",
        topic="gear advice",
        question="Do I need to break in new leather boots before a long hike?",
        context=(
            "Gear guide / Breaking in boots: Full-leather boots need about 20 to 30 km of easy walking "
            "to break in before a long trip. Synthetic trail shoes need little or no break-in."
        ),
        reference="Yes, about 20 to 30 km of easy walking; synthetic shoes need little or none.",
        subject="breaking in leather boots",
        good=(
            "Yes. Full-leather boots need about 20 to 30 km of easy walking before they're ready for a "
            "long trip."
        ),
        tip="Synthetic trail shoes, by contrast, need little or no break-in.",
        terse="Yes, about 20 to 30 km.",
        wrong="No, modern leather boots are ready to go straight out of the box.",
        invented="Soaking them in warm water first speeds the process up.",
    ),
    Faq(
        key="gear-poles",
        topic="gear advice",
        question="How long should I set my trekking poles?",
        context=(
            "Gear guide / Trekking poles: On flat ground, set the poles so that your elbow is bent at "
            "about 90 degrees when you hold the grip with the tip on the ground. Shorten them by 5 to 10 "
            "cm for long climbs and lengthen them by the same amount for descents."
        ),
        reference="Elbow at about 90 degrees on flat ground; 5-10 cm shorter uphill and longer downhill.",
        subject="trekking pole length",
        good=(
            "On flat ground, set them so your elbow is bent at about 90 degrees when you hold the grip "
            "with the tip on the ground."
        ),
        tip="For long climbs shorten them by 5 to 10 cm, and lengthen them by the same for descents.",
        terse="Elbow at about 90 degrees.",
        wrong="Set them to reach your chest and keep them the same length all day.",
        invented="Poles should be replaced every 500 km.",
    ),
    Faq(
        key="gear-daypack",
        topic="gear advice",
        question="What size pack do I need for day hikes?",
        context=(
            "Gear guide / Pack capacity: For day hikes, 20 to 30 litres holds water, food, spare layers "
            "and a first-aid kit. Overnight trips usually need 35 to 50 litres, and multi-day trips 50 "
            "litres or more."
        ),
        reference="20 to 30 litres.",
        subject="pack size for day hikes",
        good=(
            "For day hikes, 20 to 30 litres is the sweet spot: enough for water, food, spare layers and "
            "a first-aid kit."
        ),
        tip="If you start doing overnight trips, you'd move up to about 35 to 50 litres.",
        terse="20 to 30 litres.",
        wrong="You'll want at least 50 litres, even for a day hike.",
        invented="Packs under 25 litres don't have room for a hydration bladder.",
    ),
)

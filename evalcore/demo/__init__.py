"""The embedded demo project: a fictional support team calibrating its LLM judges.

:func:`build_demo` returns plain data (DataFrames and frozen dataclasses) for a project called
"Northwind support demo" (``demo`` for short on the command line): two datasets written for evalcore, three criteria with rubrics, five
simulated annotators who disagree the way people do, versioned judge templates and recorded judge
runs whose versions win on some slices and lose on others. Nothing here touches the store; another
step writes this data into the database so that a first ``make run`` has every page alive, with no
API key.

>>> demo = build_demo(seed=7)
>>> [c.name for c in demo.criteria]
['helpfulness', 'groundedness', 'preference']
"""

from __future__ import annotations

from evalcore.demo._build import PROJECT_NAME, SHORT_NAME, build_demo, demo_summary
from evalcore.demo._types import (
    DemoCriterion,
    DemoDataset,
    DemoProject,
    DemoRun,
    DemoTemplate,
    DemoTemplateVersion,
)

__all__ = [
    "PROJECT_NAME",
    "SHORT_NAME",
    "DemoCriterion",
    "DemoDataset",
    "DemoProject",
    "DemoRun",
    "DemoTemplate",
    "DemoTemplateVersion",
    "build_demo",
    "demo_summary",
]

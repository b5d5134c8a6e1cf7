"""evalcore: calibrate LLM judges against human raters.

The library behind the evalcore dashboard. It never imports streamlit, so every part of it works from a
notebook, a script, the ``evalcore`` command or a CI job.

Subpackages:

- :mod:`evalcore.data`: read CSV/JSONL/Parquet in the Vertex, Azure, RAGAS or a plain layout;
- :mod:`evalcore.metrics`: pure agreement and calibration metrics over label arrays;
- :mod:`evalcore.store`: SQLAlchemy persistence (SQLite by default, PostgreSQL by URL);
- :mod:`evalcore.judge`: judge templates, output parsing, the OpenAI-compatible client and runner;
- :mod:`evalcore.report`: calibration reports, plotly figures and exports.
"""

__version__ = "0.1.0"

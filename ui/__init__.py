"""UI helpers shared by the Streamlit pages.

Pages import from here and from :mod:`evalcore`; nothing in :mod:`evalcore` imports this package.
"""

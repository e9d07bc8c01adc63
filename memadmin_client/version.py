"""The client's version, sent in its User-Agent (its own module: http.py needs it and the
package imports http.py)."""

__version__ = "0.1.0"

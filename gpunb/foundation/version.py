"""gpunb's version: part of every cache key, so it lives below every layer that needs it."""

VERSION = "0.1.0"

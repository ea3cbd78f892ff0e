"""The built-in tabs, one module each; every module's ``tab()`` returns its :class:`Tab`."""

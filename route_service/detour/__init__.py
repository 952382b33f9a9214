"""Detours from an uploaded CSV file: file-name rules, parsing, routing, the answer's body."""

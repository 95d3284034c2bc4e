"""Did it reproduce? A verdict for every paper number (`numbers`), a test for every claim of a
paper (`claims`), and the per-paper certificate that counts them (`certificate`). docs/verdicts.md
"Verdicts, claims and the certificate" states the rules."""

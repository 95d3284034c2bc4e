"""The knobs between a paper's recipe and the fair recipe (`workflow/config/knobs.yaml`): the
catalogue of knobs (`catalogue`) and the knobs two resolved recipes differ in (`derive`)."""

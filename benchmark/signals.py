"""What the catalogue tells the apps above it, without importing them (they connect in their
``AppConfig.ready``)."""
from django.dispatch import Signal

# Sent with ``test_set_id`` after a test set's ICQ cue table was stored: entries scored before
# it (or against an older one) need their ICQ tests again.
cue_table_stored = Signal()

# Sent with ``test_set_id`` after a test set's skill variants were (re)built: skill entries
# scored on older variants or by an older scorer need their gaps again.
skill_sets_built = Signal()

"""What the catalogue tells the apps above it, without importing them (they connect in their
``AppConfig.ready``)."""
from django.dispatch import Signal

# Sent with ``test_set_id`` after a test set's ICQ cue table was stored: entries scored before
# it (or against an older one) need their ICQ tests again.
cue_table_stored = Signal()

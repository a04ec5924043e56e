import os

from django.core.wsgi import get_wsgi_application

from config.hosts import refuse_unsafe_hosts

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# After the set-up, so the message names the setting rather than a half-loaded app registry.
refuse_unsafe_hosts()

"""Project configuration: settings, URL routes and the WSGI/ASGI entry points."""

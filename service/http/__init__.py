"""HTTP transport: reading request bodies (JSON or multipart with binary array parts),
encoding answers by the Accept header, the ASGI guards in front of the routes and the
offline /docs pages. Nothing here knows about models, jobs or okcore."""

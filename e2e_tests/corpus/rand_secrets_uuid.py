import secrets, uuid, os
print(len(secrets.token_hex(16)), len(secrets.token_bytes(8)), len(os.urandom(5)))
u = uuid.uuid4()
print(u.version, len(str(u)))
print(uuid.uuid5(uuid.NAMESPACE_DNS, "example.org"))

import gc
events = []
gc.callbacks.append(lambda phase, info: events.append(phase))
gc.collect()
print(events[:2])
gc.disable(); print(gc.isenabled()); gc.enable()
print(len(gc.get_stats()))

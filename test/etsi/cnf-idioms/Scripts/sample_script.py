# A management script of the package; Calaf does not run it.
print("instantiate_start")

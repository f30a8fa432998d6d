# A management driver as Tacker's CNF packages carry one; Calaf runs no Python hooks.
def instantiate_end(vnf_instance):
    return None

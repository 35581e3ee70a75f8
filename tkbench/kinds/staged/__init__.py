"""The tests of several stages: the PTS 2.0.2 tests beyond the basic four (host idle
recovery, cross-stimulus recovery, the demand-intensity pair of CBW and DIRTH), one
type each; :mod:`.common` holds what their stages share."""

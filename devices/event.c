#include "hs_dev.h"

hs_event_state hs__events_poll(const cl_event *events, int n) {
  hs_event_state state = HS_EVENTS_DONE;
  for (int i = 0; i < n; i++) {
    if (!events[i]) continue;
    cl_int st = CL_COMPLETE;
    cl_int err = clGetEventInfo(events[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st,
                                &st, NULL);
    if (err != CL_SUCCESS) {
      hs__cl_fail(err, "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", NULL);
      return HS_EVENTS_FAILED;
    }
    if (st < 0) {
      hs__fail(HS_ERR_OPENCL, "a device command failed with %s", hs__cl_error_name(st));
      return HS_EVENTS_FAILED;
    }
    if (st != CL_COMPLETE) state = HS_EVENTS_PENDING;
  }
  return state;
}

hs_status hs__events_wait(const cl_event *events, int n) {
  for (int i = 0; i < n; i++) {
    if (!events[i]) continue;
    cl_int err = clWaitForEvents(1, &events[i]);
    if (err != CL_SUCCESS) {
      cl_int st = 0;
      clGetEventInfo(events[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
      return hs__fail(HS_ERR_OPENCL, "clWaitForEvents failed with %s (command status %s)",
                      hs__cl_error_name(err), hs__cl_error_name(st));
    }
  }
  return HS_OK;
}

void hs__events_release(cl_event *events, int n) {
  for (int i = 0; i < n; i++) {
    if (events[i]) clReleaseEvent(events[i]);
    events[i] = NULL;
  }
}

cl_event hs__event_retain(cl_event ev) {
  if (ev) clRetainEvent(ev);
  return ev;
}

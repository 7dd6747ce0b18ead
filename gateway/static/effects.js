// How long a command's effect lasts and what ends it, said on its control; and which commands are worth
// holding (hold-to-drive repeats a command only where the device stops without renewals or where
// letting go should stop it: a wheel speed, not a stop or a position).

/** Types driven while a button is held: a speed, a velocity, a twist. Never a stop or a position. */
const HOLD_TYPES = /motor|veloc|speed|twist|drive/i;
const NOT_HELD = /stop|position|lease/i;

/** True when "Hold to drive" means something for command `type`. */
export function holdsMeaning(type) {
  return HOLD_TYPES.test(type) && !NOT_HELD.test(type);
}

const UNTIL_CHANGED = "Stays as set until another command changes it.";

/** A sentence on how long `type`'s effect lasts on `device` (its list_devices entry); "" when instant. */
export function effectOf(type, device) {
  const leaseMs = device?.capabilities?.lease_renewal_ms?.[type];
  if (leaseMs)
    return (
      `Each Send drives for ${leaseMs / 1000} s (the motor lease), then the wheels stop; ` +
      "Hold to drive keeps sending while held and stops on release."
    );
  switch (type) {
    case "hwgateway/LegoMotorSpeed":
      return "Runs until Stop, STOP ALL, or this page disconnects (the gateway then stops the motor); Hold to drive stops it on release.";
    case "hwgateway/LegoMotorPosition":
      return "Turns once to the position, then floats, holds or brakes as end_state says.";
    case "hwgateway/LegoMotorStop":
    case "hwgateway/BindingPause":
      return type.endsWith("Pause")
        ? "The binding sends its safe output and stays paused until Resume."
        : "Acts at once: the motor stops and stays stopped.";
    case "sound":
    case "rumble":
      return "Lasts duration_s (0 stops it now); STOP ALL or this page disconnecting ends it early.";
    case "thymio_msgs/Sound":
    case "thymio_msgs/SystemSound":
      return "Plays once.";
    case "hwgateway/SimButton":
      return "Pressed for half a second, then released.";
    case "hwgateway/MicrobitText":
      return "Scrolls once across the LEDs.";
    case "hwgateway/MicrobitPwm":
    case "hwgateway/MicrobitPin":
      return "Leased: kept until changed, STOP ALL, or this page disconnects (the pin then goes low).";
    case "asebaros_msgs/GetVariable":
    case "asebaros_msgs/GetNodeList":
    case "asebaros_msgs/GetDescription":
    case "hwgateway/AsebaVMDescription":
    case "hwgateway/AsebaVariables":
    case "hwgateway/AsebaCompile":
      return "Reads only: nothing on the device changes.";
    case "asebaros_msgs/LoadScript":
    case "hwgateway/AsebaVMControl":
      return "The program keeps running (or stays stopped) until the next load or VM command.";
    default:
      if (/led|colou?r|matrix/i.test(type)) return UNTIL_CHANGED;
      return "";
  }
}
